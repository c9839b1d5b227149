#!/usr/bin/env bash
# Two builds' heterogeneous loops side by side on one host, alternated in rounds so machine noise
# hits both (perf/RESULTS.md): bench_loop_tokens (does the device token starve?) and bench_loops.
#   bash perf/ab-loops.sh OLD_BIN NEW_BIN [ROUNDS=1]
# OLD_BIN / NEW_BIN: directories holding bench_loop_tokens and bench_loops (a bundle's bin/); a
# sibling lib/ goes on LD_LIBRARY_PATH and a sibling kernels_cl/ on HETFLOW_KERNEL_PATH. The device
# is HETFLOW_DEVICE's. Optional environment:
#   AB_TOKENS  bench_loop_tokens argument lists separated by ';' (default "20 65536 1024 3;5 65536 1024 3")
#   AB_LOOPS   bench_loops argument lists separated by ';' (default "nbody 32768 6 512 --fast-math")
set -u
old=${1:?usage: ab-loops.sh OLD_BIN NEW_BIN [ROUNDS]} new=${2:?usage: ab-loops.sh OLD_BIN NEW_BIN [ROUNDS]}
rounds=${3:-1}
IFS=';' read -r -a tokens <<< "${AB_TOKENS:-20 65536 1024 3;5 65536 1024 3}"
IFS=';' read -r -a loops <<< "${AB_LOOPS:-nbody 32768 6 512 --fast-math}"
date -u +%Y-%m-%dT%H:%MZ
for round in $(seq "$rounds"); do
  for side in old new; do
    B=$old
    [ "$side" = new ] && B=$new
    echo "=== round $round $side ($B)"
    run_in() { LD_LIBRARY_PATH="$B/../lib:${LD_LIBRARY_PATH:-}" HETFLOW_KERNEL_PATH="$B/../kernels_cl" timeout 300 "$@"; }
    # shellcheck disable=SC2086  # word lists on purpose
    for t in "${tokens[@]}"; do run_in "$B/bench_loop_tokens" $t 2>&1 | tail -n 5; done
    # shellcheck disable=SC2086
    for l in "${loops[@]}"; do run_in "$B/bench_loops" $l 2>&1 | grep -A12 "calls each"; done
  done
done
