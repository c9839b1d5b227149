#!/usr/bin/env bash
# Instructions per request on the submitting thread (where the engine's steps and the driver's
# enqueue run) and on all threads, counted by callgrind: deterministic enough to compare engine
# changes on a noisy 2-core machine, where timings are not (perf/RESULTS.md, 2026-11-27 05:24Z).
# Two runs of bench_request_stream, 20,000 and 60,000 requests; the difference over 40,000
# leaves out the set-up (the kernel's build alone is ~4e9 instructions on PoCL).
#   bash perf/callgrind-per-request.sh [BUILD_DIR=build-release] [KINDS="kernel transfer raw-kernel raw-transfer"]
# The path measured is PoCL's: its CPU device gets out-of-order queues, whose commands are settled a
# status query each, and under valgrind the device lags the stream. NVIDIA's queues are in order and
# the H200 keeps up, so one query settles every command ahead (StreamingStep::settle_ended).
# HETFLOW_QUEUE_ORDER=in-order takes that path's code here, but its probe still finds the command
# running unless the profiling build waits for it first (perf/RESULTS.md, 2026-11-29 09:08Z: a
# clWaitForEvents on the probed command, in a throwaway build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-release}
kinds=${2:-kernel transfer raw-kernel raw-transfer}
command -v valgrind > /dev/null || { echo "callgrind-per-request: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
export HETFLOW_KERNEL_PATH=${HETFLOW_KERNEL_PATH:-$root/kernels_cl}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
summary() { grep -m1 '^summary' "$1" | cut -d' ' -f2; }
for kind in $kinds; do
  declare -A main=() all=()
  for n in 20000 60000; do
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/$kind.$n" \
      "$build/bin/bench_request_stream" "$kind" "$n" > /dev/null 2>&1
    main[$n]=$(summary "$out/$kind.$n-01")  # thread 1: the program's, which submits
    all[$n]=0
    for f in "$out/$kind.$n"-*; do all[$n]=$((all[$n] + $(summary "$f"))); done
  done
  printf '%-13s submitting thread %6d instructions a request, all threads %6d\n' "$kind" \
    $(((main[60000] - main[20000]) / 40000)) $(((all[60000] - all[20000]) / 40000))
done
