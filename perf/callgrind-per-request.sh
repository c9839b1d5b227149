#!/usr/bin/env bash
# Instructions per request on the submitting thread (where the engine's steps and the driver's
# enqueue run) and on all threads, counted by callgrind: deterministic enough to compare engine
# changes on a noisy 2-core machine, where timings are not (perf/RESULTS.md, 2026-11-27 05:24Z).
# Two runs of bench_request_stream, 20,000 and 60,000 requests; the difference over 40,000
# leaves out the set-up (the kernel's build alone is ~4e9 instructions on PoCL).
#   bash perf/callgrind-per-request.sh [BUILD_DIR=build-release] [KINDS="kernel transfer raw-kernel raw-transfer"]
# Two settling paths: PoCL's (the default), where its CPU device gets out-of-order queues whose
# commands are settled a status query each, and under valgrind the device lags the stream; and
# NVIDIA's (LIKE=nvidia), where queues are in order and the H200 keeps up, so one query settles
# every command ahead (StreamingStep::settle_ended). LIKE=nvidia sets HETFLOW_QUEUE_ORDER=in-order
# and preloads tools/drivers/keep_up.c (built here with cc), which makes each status query wait for
# its command first, as if the device had kept up; the driver's calls are not the engine's, so
# compare the submitting thread's figure between engines, not with the default path's.
#   LIKE=nvidia bash perf/callgrind-per-request.sh build-prof transfer
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-release}
kinds=${2:-kernel transfer raw-kernel raw-transfer}
command -v valgrind > /dev/null || { echo "callgrind-per-request: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
export HETFLOW_KERNEL_PATH=${HETFLOW_KERNEL_PATH:-$root/kernels_cl}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case ${LIKE:-pocl} in
  pocl) ;;
  nvidia)
    cc -O2 -shared -fPIC "$root/tools/drivers/keep_up.c" -ldl -o "$out/keep_up.so"
    export HETFLOW_QUEUE_ORDER=in-order LD_PRELOAD="$out/keep_up.so"
    ;;
  *) echo "callgrind-per-request: LIKE must be pocl or nvidia, got '$LIKE'" >&2; exit 2 ;;
esac
summary() { grep -m1 '^summary' "$1" | cut -d' ' -f2; }
# The driver's part of a thread: the ICD loader's OpenCL entry points, inclusive of all they call
# (from the per-function list, before the annotated sources; a preloaded wrapper's own few
# instructions stay out, and what it calls in the loader is counted once).
driver() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2> /dev/null |
    awk '/^-- (Auto|User)-annotated/ { done = 1 }  # read on: an early exit would fail the pipe
         !done && $2 ~ /^\(/ && $0 ~ /\?\?\?:cl[A-Z][A-Za-z]* \[[^]]*libOpenCL/ { gsub(",", "", $1); sum += $1 }
         END { printf "%d\n", sum }'
}
for kind in $kinds; do
  declare -A main=() all=() drv=()
  for n in 20000 60000; do
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/$kind.$n" \
      "$build/bin/bench_request_stream" "$kind" "$n" > /dev/null 2>&1
    main[$n]=$(summary "$out/$kind.$n-01")  # thread 1: the program's, which submits
    drv[$n]=$(driver "$out/$kind.$n-01")
    all[$n]=0
    for f in "$out/$kind.$n"-*; do all[$n]=$((all[$n] + $(summary "$f"))); done
  done
  # "engine": the submitting thread less the driver's calls, hetflow's own work (and the benchmark's loop).
  printf '%-13s submitting thread %6d instructions a request (engine %6d), all threads %6d\n' "$kind" \
    $(((main[60000] - main[20000]) / 40000)) \
    $((((main[60000] - drv[60000]) - (main[20000] - drv[20000])) / 40000)) $(((all[60000] - all[20000]) / 40000))
done
