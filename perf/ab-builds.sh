#!/usr/bin/env bash
# Two builds (or one build in two settings) benchmarked alternately in rounds, so machine noise
# hits both sides (perf/RESULTS.md):
#   bash perf/ab-builds.sh OLD_BIN NEW_BIN [ROUNDS=2]
# OLD_BIN / NEW_BIN: directories holding bench_workloads and bench_overhead (a bundle's bin/, or a
# build's bin/); a sibling lib/ is put on LD_LIBRARY_PATH and a sibling kernels_cl/ on
# HETFLOW_KERNEL_PATH. Optional environment:
#   AB_WORKLOADS  bench_workloads argument lists separated by ';'
#                 (default "sobel 1280x720 20 5;jacobi 1024 100 5")
#   AB_OVERHEAD   bench_overhead arguments, or "none" (default "20000 5")
#   AB_OLD_ENV / AB_NEW_ENV  VAR=value words set for that side only (e.g. one binary, two settings)
set -u
old=${1:?usage: ab-builds.sh OLD_BIN NEW_BIN [ROUNDS]} new=${2:?usage: ab-builds.sh OLD_BIN NEW_BIN [ROUNDS]}
rounds=${3:-2}
IFS=';' read -r -a workloads <<< "${AB_WORKLOADS:-sobel 1280x720 20 5;jacobi 1024 100 5}"
overhead=${AB_OVERHEAD:-20000 5}
date -u +%Y-%m-%dT%H:%MZ
for round in $(seq "$rounds"); do
  for side in old new; do
    B=$old side_env=${AB_OLD_ENV:-}
    [ "$side" = new ] && B=$new side_env=${AB_NEW_ENV:-}
    echo "=== round $round $side ($B${side_env:+, $side_env})"
    for w in "${workloads[@]}"; do
      # shellcheck disable=SC2086  # word lists on purpose
      env $side_env LD_LIBRARY_PATH="$B/../lib:${LD_LIBRARY_PATH:-}" HETFLOW_KERNEL_PATH="$B/../kernels_cl" "$B/bench_workloads" $w 2>&1 | grep -A2 "median of"
    done
    # shellcheck disable=SC2086
    [ "$overhead" != none ] && env $side_env LD_LIBRARY_PATH="$B/../lib:${LD_LIBRARY_PATH:-}" HETFLOW_KERNEL_PATH="$B/../kernels_cl" "$B/bench_overhead" $overhead 2>&1 | sed -n '/^request/,/^$/p'
  done
done
