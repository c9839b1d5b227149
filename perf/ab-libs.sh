#!/usr/bin/env bash
# One benchmark binary against several builds of libhetflow, alternated in rounds so machine noise
# hits every build alike (perf/RESULTS.md). The benchmarks link libhetflow dynamically and the
# public headers did not change between the builds compared, so the same binary runs on each;
# perf/bisect-overhead.sh is the variant for builds whose headers differ.
#   bash perf/ab-libs.sh ROUNDS PATTERN COMMAND... -- DIR...
# Each DIR holds lib/libhetflow.so.0 (as perf/engine-at.sh makes it); it is put first on
# LD_LIBRARY_PATH. PATTERN (grep -E) picks the lines printed per run; the process's CPU time is
# printed too (user + sys over wall: how many cores the run kept busy, spinning included).
set -u
rounds=${1:?usage: ab-libs.sh ROUNDS PATTERN COMMAND... -- DIR...} pattern=${2:?usage}
shift 2
cmd=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do cmd+=("$1"); shift; done
[ $# -gt 1 ] || { echo "usage: ab-libs.sh ROUNDS PATTERN COMMAND... -- DIR..." >&2; exit 2; }
shift
TIMEFORMAT="cpu: %U s user, %S s sys, %R s wall"
for round in $(seq "$rounds"); do
  for d in "$@"; do
    echo "=== round $round $d: ${cmd[*]}"
    { time LD_LIBRARY_PATH="$d/lib:${LD_LIBRARY_PATH:-}" "${cmd[@]}" 2>&1 | grep -E "$pattern"; } 2>&1
  done
done
