#!/usr/bin/env bash
# The engine tests with several threads — submitting, waiting, failing, freeing, the flow graph's
# workers and the OpenCL runtime's callback threads — under ThreadSanitizer; any report fails the
# run. Called by tools/bootstrap.sh test (so by CI) after tools/sanitize.sh; alone: bash tools/tsan.sh.
#
# TSan must see every synchronisation, and oneTBB's scheduler lives in libtbb: with Debian's
# prebuilt (uninstrumented) libtbb, TSan reported 137 races in test_threads_and_lifetimes alone,
# all of them TBB's own task hand-offs. So this builds oneTBB itself with -fsanitize=thread, from
# Debian's source package of the very version installed (`apt-get source onetbb`; the deb-src
# entry is added if missing), once per build directory (~1.5 min on 2 cores). With it, 0 reports
# (2026-11-23), and no suppression file is needed: PoCL's and the ICD loader's threads reach our
# code only through completion callbacks, whose hand-off goes through mutexes TSan sees.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HETFLOW_TSAN_BUILD_DIR:-$root/build-tsan}
tbb=$build/onetbb
suites=(test_threads_and_lifetimes test_completion_poller test_errors test_device_faults test_random_programs test_concurrent_launches test_appendix_a test_callback_worth test_on_ready test_flow_nodes test_flow_nodes_one_worker test_parallel_for test_parallel_for_devices)
# test_parallel_for_devices without its workload and CLI cases: they add the loops' instrumented CPU
# bodies (2 min under TSan here) and no thread interplay the other cases lack (ASan runs them all).
declare -A cases=([test_concurrent_launches]='*one process*,*two controllers*'
                  [test_parallel_for_devices]='over two devices*,static:0.4*,the home controller*,a chunk that fails*,misuse*,a read nothing writes*,a loop'"'"'s constants*')
mkdir -p "$build"

if [ ! -f "$tbb/install/lib/cmake/TBB/TBBConfig.cmake" ]; then
  version=$(dpkg-query -W -f='${source:Version}' libtbb-dev)
  echo "== tsan: building oneTBB $version with -fsanitize=thread in $tbb"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! apt-get source --print-uris -qq "onetbb=$version" >/dev/null 2>&1; then
    # Debian 12 images list binary packages only; the same archives carry the sources.
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
        $sudo tee /etc/apt/sources.list.d/hetflow-deb-src.sources >/dev/null
    else
      grep -h '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' |
        $sudo tee /etc/apt/sources.list.d/hetflow-deb-src.list >/dev/null
    fi
    $sudo apt-get update -qq
  fi
  rm -rf "$tbb" && mkdir -p "$tbb"
  (cd "$tbb" && apt-get source -qq "onetbb=$version" >"$tbb/source.log" 2>&1) || { tail -n 20 "$tbb/source.log"; exit 1; }
  src=$(find "$tbb" -maxdepth 1 -type d -name 'onetbb-*' | head -n 1)
  cmake -S "$src" -B "$tbb/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTBB_TEST=OFF -DTBB_EXAMPLES=OFF \
        -DTBB_STRICT=OFF -DTBBMALLOC_BUILD=OFF -DTBB_SANITIZE=thread -DCMAKE_INSTALL_PREFIX="$tbb/install" \
        >"$tbb/build.log" 2>&1
  if ! { cmake --build "$tbb/build" -j "$(nproc 2>/dev/null || echo 2)" && cmake --install "$tbb/build"; } >>"$tbb/build.log" 2>&1; then
    tail -n 40 "$tbb/build.log"
    exit 1
  fi
fi

echo "== tsan: building ${suites[*]} in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DHETFLOW_SANITIZE=thread \
      -DHETFLOW_BUILD_PERF=OFF -DTBB_DIR="$tbb/install/lib/cmake/TBB" >/dev/null
if ! cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${suites[@]}" > "$build/tsan-build.log" 2>&1; then
  tail -n 40 "$build/tsan-build.log"
  exit 1
fi
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export HETFLOW_RP_SCALE=0.1   # random programs: 10 % of each configuration's count
source "$root/tools/sanitizers/run-suites.bash"
run_suites tsan "$build" "WARNING: ThreadSanitizer"
