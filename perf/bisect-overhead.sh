#!/usr/bin/env bash
# bench_overhead of several builds in one process tree, alternated in rounds so machine noise hits
# them all (perf/RESULTS.md): each DIR holds bin/bench_overhead, lib/libhetflow.so.0 and kernels_cl/
# (the runtime's other libraries come from LD_LIBRARY_PATH, e.g. a bundle's lib/).
#   bash perf/bisect-overhead.sh ROUNDS "N RUNS" DIR...    prints the rows per build and round
set -u
rounds=${1:?usage: bisect-overhead.sh ROUNDS "N RUNS" DIR...} args=${2:?usage} && shift 2
for round in $(seq "$rounds"); do
  for d in "$@"; do
    echo "=== round $round $d"
    # shellcheck disable=SC2086  # the argument list on purpose
    LD_LIBRARY_PATH="$d/lib:${LD_LIBRARY_PATH:-}" HETFLOW_KERNEL_PATH="$d/kernels_cl" "$d/bin/bench_overhead" $args 2>&1 |
      grep -E "^(empty kernel|4-byte H2D/D2H|sync: blocking 4-byte xfer|launch \+ wait round trip) +[0-9]"
  done
done
