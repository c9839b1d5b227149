#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine: installs what hetflow needs (docs/architecture.md, "Dependencies"),
# builds it in Release, then either runs the main job or the test suite.
#   bash tools/bootstrap.sh demo   # set up, build, run `hetflow run sobel` on the default device
#   bash tools/bootstrap.sh test   # set up, build, run every test through ctest
# Idempotent and non-interactive; run as root or with sudo available.
set -euo pipefail
mode=${1:-demo}
case "$mode" in demo|test|setup) ;; *) echo "usage: $0 demo|test|setup" >&2; exit 2 ;; esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HETFLOW_BUILD_DIR:-$root/build}

packages=(build-essential cmake pkg-config libtbb-dev ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers
          libspdlog-dev doctest-dev pocl-opencl-icd libcli11-dev nlohmann-json3-dev graphviz clinfo oclgrind
          libstarpu-dev clang-format)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "== installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$mode" = setup ] && exit 0

jobs=$(nproc 2>/dev/null || echo 2)
echo "== building in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"

if [ "$mode" = demo ]; then
  exec "$build/bin/hetflow" run sobel
fi
# First the layout check (tools/check-format.sh), then the sanitizer builds of the engine's lifetime,
# thread and failure tests — ASan+UBSan, then
# TSan with an instrumented oneTBB (HETFLOW_SANITIZERS=0 skips both) — then the whole suite, whose
# closing line is the run's.
bash "$root/tools/check-format.sh"
if [ "${HETFLOW_SANITIZERS:-1}" != 0 ]; then
  bash "$root/tools/sanitize.sh"
  bash "$root/tools/tsan.sh"
fi
# Serially: the overlap tests read OpenCL profiling times on a CPU device, which other test
# processes would starve.
cd "$build"
exec ctest --output-on-failure --timeout 900
