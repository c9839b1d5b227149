#!/usr/bin/env bash
# Builds Release and gathers what a bare GPU host needs to run the benchmarks and the engine
# tests into DIR (default bundle/, git-ignored): binaries, kernels_cl/, and the shared libraries
# it lacks (oneTBB, spdlog, fmt, libhetflow) via tools/bundle-runtime.sh.
#   bash perf/make-bundle.sh [DIR]    then, there:  LD_LIBRARY_PATH=DIR/lib DIR/bin/...
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/bundle}
build=${HETFLOW_BUNDLE_BUILD_DIR:-$root/build-release}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHETFLOW_BUILD_TESTS=ON -DHETFLOW_BUILD_PERF=ON -DHETFLOW_SANITIZE= >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib"
cp "$build"/bin/hetflow "$build"/bin/bench_* "$dir/bin/"
for p in banded_heat device_fault device_memory join_pipeline; do [ -x "$build/bin/$p" ] && cp "$build/bin/$p" "$dir/bin/"; done
for t in test_appendix_a test_errors test_loop_workloads test_random_programs test_soak test_tracker test_concurrent_launches test_threads_and_lifetimes test_device_faults test_on_ready test_flow_nodes test_flow_nodes_one_worker test_no_spinning test_flush_policy test_callback_worth test_queue_order test_parallel_for test_parallel_for_devices; do
  [ -x "$build/tests/$t" ] && cp "$build/tests/$t" "$dir/bin/"
done
# The plain-OpenCL driver probes (tools/drivers/, docs/drivers.md), where they exist.
for c in pocl_dlhandle_race device_fault_probe live_events_probe event_cost_probe notice_probe flush_probe cross_context_pinned_probe chunk_chain_probe; do
  [ -f "$root/tools/drivers/$c.c" ] && cc -O2 "$root/tools/drivers/$c.c" -lOpenCL -lpthread -o "$dir/bin/$c"
done
# The driver-call counter (LD_PRELOAD; docs/drivers.md), beside the libraries.
cc -O2 -shared -fPIC "$root/tools/drivers/cl_call_times.c" -ldl -o "$dir/lib/cl_call_times.so"
cp -r "$root/kernels_cl" "$dir/kernels_cl"
cp -L "$build"/libhetflow.so.* "$dir/lib/"
bash "$root/tools/bundle-runtime.sh" "$dir" "$dir"/bin/* >/dev/null
strip "$dir"/bin/* "$dir"/lib/libhetflow.so.* 2>/dev/null || true
du -sh "$dir"
