#!/usr/bin/env bash
# The engine tests that exercise lifetimes, threads and failures, built with AddressSanitizer (leak
# checking on) and UndefinedBehaviorSanitizer, any report failing the run. Called by
# tools/bootstrap.sh test (so by CI) before the main suite; alone: bash tools/sanitize.sh.
# Reduced counts of random programs keep it within a few minutes on 2 cores.
# ThreadSanitizer needs its own build, with an instrumented oneTBB: tools/tsan.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HETFLOW_SANITIZE_BUILD_DIR:-$root/build-asan}
# Each suite with the doctest filter of the cases run here ("" = all of them).
suites=(test_errors test_threads_and_lifetimes test_random_programs test_concurrent_launches test_tracker test_flush_policy test_queue_order test_completion_poller test_callback_worth test_device_faults test_on_ready test_flow_nodes test_flow_nodes_one_worker test_parallel_for test_parallel_for_devices)
declare -A cases=([test_concurrent_launches]='*one process*,*two controllers*')
echo "== sanitizers (address,undefined): building ${suites[*]} in $build"
# -O1: sanitizer builds compile slowly, and these tests need no more.
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
      -DHETFLOW_SANITIZE=address,undefined -DHETFLOW_BUILD_PERF=OFF >/dev/null
if ! cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${suites[@]}" > "$build/sanitize-build.log" 2>&1; then
  tail -n 40 "$build/sanitize-build.log"
  exit 1
fi
export ASAN_OPTIONS=detect_leaks=1
export LSAN_OPTIONS=suppressions=$root/tools/sanitizers/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:suppressions=$root/tools/sanitizers/ubsan.supp
export HETFLOW_RP_SCALE=0.15   # random programs: 15 % of each configuration's count
source "$root/tools/sanitizers/run-suites.bash"
run_suites sanitizers "$build" "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:"
