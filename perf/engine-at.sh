#!/usr/bin/env bash
# Today's bench_overhead built against the engine of another commit, for comparing engines alone:
# the benchmark's own source changes between commits (rows, controllers alive in the process), and
# a comparison of each commit's own build of it measures those changes too.
#   bash perf/engine-at.sh COMMIT DIR
# Builds libhetflow at COMMIT in a git worktree (/tmp/hetflow-engine-COMMIT), compiles today's
# perf/bench_overhead.cpp against its headers and library, and fills DIR/{bin,lib,kernels_cl} as
# perf/bisect-overhead.sh and perf/ab-builds.sh expect. Put DIR inside the bundle made by
# perf/make-bundle.sh (after making it: that empties the bundle), e.g. bundle/engines/9b806cf; then, on
# the GPU host, with LD_LIBRARY_PATH=bundle/lib:
#   bash perf/bisect-overhead.sh 3 "20000 5" bundle/engines/*
set -euo pipefail
commit=${1:?usage: engine-at.sh COMMIT DIR} dir=${2:?usage: engine-at.sh COMMIT DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wt=/tmp/hetflow-engine-$commit
[ -d "$wt" ] || git -C "$root" worktree add -f "$wt" "$commit" >/dev/null
cmake -S "$wt" -B "$wt/build" -DCMAKE_BUILD_TYPE=Release -DHETFLOW_BUILD_TESTS=OFF -DHETFLOW_BUILD_PERF=OFF >/dev/null
cmake --build "$wt/build" -j "$(nproc)" --target hetflow >/dev/null
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib"
g++ -O2 -std=c++20 -I"$wt/include" -I"$root/perf" "$root/perf/bench_overhead.cpp" "$root/perf/native/raw_requests.cpp" -L"$wt/build" -lhetflow -lOpenCL -ltbb \
  -o "$dir/bin/bench_overhead"
cp -L "$wt"/build/libhetflow.so.0 "$dir/lib/"
cp -r "$wt/kernels_cl" "$dir/kernels_cl"
strip "$dir/bin/bench_overhead" "$dir/lib/libhetflow.so.0"
echo "$dir: bench_overhead of $(git -C "$root" rev-parse --short HEAD) on the engine of $commit"
