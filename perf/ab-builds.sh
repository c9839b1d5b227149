#!/usr/bin/env bash
# Two builds' benchmarks alternated in rounds, so machine noise hits both (perf/RESULTS.md):
#   bash perf/ab-builds.sh OLD_BIN NEW_BIN [ROUNDS=2]
# OLD_BIN / NEW_BIN: directories holding bench_workloads and bench_overhead (e.g. a worktree of the
# old commit built with `cmake --build B --target bench_workloads bench_overhead`, and build-release).
set -u
old=${1:?usage: ab-builds.sh OLD_BIN NEW_BIN [ROUNDS]} new=${2:?usage: ab-builds.sh OLD_BIN NEW_BIN [ROUNDS]}
rounds=${3:-2}
date -u +%Y-%m-%dT%H:%MZ
for round in $(seq "$rounds"); do
  for side in old new; do
    B=$old
    [ "$side" = new ] && B=$new
    echo "=== round $round $side ($B)"
    "$B/bench_workloads" sobel 1280x720 20 5 2>&1 | grep -A2 "median of"
    "$B/bench_workloads" jacobi 1024 100 5 2>&1 | grep -A2 "median of"
    "$B/bench_overhead" 20000 5 2>&1 | tail -5
  done
done
