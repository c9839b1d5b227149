#!/usr/bin/env bash
# The engine tests that exercise lifetimes, threads and failures, built with AddressSanitizer (leak
# checking on) and UndefinedBehaviorSanitizer, any report failing the run. Called by
# tools/bootstrap.sh test (so by CI) before the main suite; alone: bash tools/sanitize.sh.
# Reduced counts of random programs keep it within a few minutes on 2 cores.
# ThreadSanitizer is not run here: Debian's prebuilt libtbb is not instrumented, so TSan reports
# its internal hand-offs as races (docs/architecture.md, "Threads and sanitizers").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HETFLOW_SANITIZE_BUILD_DIR:-$root/build-asan}
targets=(test_errors test_threads_and_lifetimes test_random_programs test_concurrent_launches banded_heat test_tracker
         test_flush_policy test_settings)
echo "== sanitizers (address,undefined): building ${targets[*]} in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHETFLOW_SANITIZE=address,undefined \
      -DHETFLOW_BUILD_PERF=OFF >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
export HETFLOW_RP_SCALE=0.15   # random programs: 15 % of each configuration's count
cd "$build"
# Only the suites built above (every doctest case is a ctest test named "suite: case").
exec ctest --output-on-failure --timeout 900 \
  -R '^(errors|threads_and_lifetimes|random_programs|tracker|flush_policy|settings): |^concurrent_launches: banded launches of one kernel(, one process|: two controllers)'
