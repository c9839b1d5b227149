#!/usr/bin/env bash
# The whole GPU-host measurement (see perf/RESULTS.md): run on the device machine from the
# repository root with the bundle made by perf/make-bundle.sh carried along.
#   bash perf/run-gpu.sh [BUNDLE=bundle] [PART=all]    logs go to $OUT (or /tmp/hetflow-out), a table last
# PART: tests (the engine tests on the GPU and on the host's PoCL), bench (the benchmarks), sobel
# (only the Sobel measurements of issue 16: default slots, a slot and host-thread sweep), flow (the
# flow-graph Sobel against the imperative one), loops (the heterogeneous loop's schedulers),
# loopdevices (one loop over the H200 and PoCL, and over two controllers of the H200),
# twogpu (one loop over two GPUs of one host: machine kind nvidia-h100-x2 or nvidia-h200-x2),
# peerloops (the Barnes-Hut loop balanced by StarPU against parallel_for), idleflush (per request
# with the idle flush kept, HETFLOW_DEBUG_IDLE_FLUSH=1, against the start-up check's verdict, rounds
# alternated; not in `all`), or all; several as a comma-separated list (tests,flow,loops).
# A device call may run 10 minutes, so the two parts can go in separate calls. QUICK=1 leaves out
# of `tests` what checks PoCL rather than the engine (the guard's control runs and the plain
# reproducer) and test_concurrent_launches (~2.5 min there), keeping the 200 banded runs.
set -uo pipefail
B=${1:-bundle}
PART=${2:-all}
OUT=${OUT:-/tmp/hetflow-out}
L=/tmp/hetflow-logs  # every log; $OUT gets a tarball of them (the device tool returns few files)
mkdir -p "$OUT" "$L"
export LD_LIBRARY_PATH=$B/lib HETFLOW_KERNEL_PATH=$B/kernels_cl
# The GPU host's ICD directory lists only PoCL; register NVIDIA's OpenCL driver beside it.
mkdir -p /tmp/vendors
cp /etc/OpenCL/vendors/*.icd /tmp/vendors/ 2>/dev/null
echo libnvidia-opencl.so.1 > /tmp/vendors/nvidia.icd
export OCL_ICD_VENDORS=/tmp/vendors
log() { echo "== $*" | tee -a "$L/summary.txt"; }
run() { local name=$1; shift; log "$name: $*"; timeout 300 "$@" > "$L/$name.log" 2>&1; local rc=$?; tail -n 4 "$L/$name.log" | tee -a "$L/summary.txt"; echo "rc=$rc" | tee -a "$L/summary.txt"; }
# N fresh processes of a command: how many exited 0, how many aborted (134), how many otherwise.
repeat() {
  local name=$1 n=$2; shift 2
  log "$name: $n x $*"
  local ok=0 aborted=0 other=0
  for _ in $(seq "$n"); do
    "$@" >> "$L/$name.log" 2>&1
    case $? in 0) ok=$((ok + 1)) ;; 134) aborted=$((aborted + 1)) ;; *) other=$((other + 1)) ;; esac
  done
  echo "$name: $ok ok, $aborted aborted, $other other of $n" | tee -a "$L/summary.txt"
}

has() { [ "$PART" = all ] || [[ ",$PART," == *",$1,"* ]]; }
date -u +%Y-%m-%dT%H:%MZ | tee "$L/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$L/summary.txt"
$B/bin/hetflow devices | tee "$L/devices.log"

if has tests; then
  export HETFLOW_DEVICE=nvidia
  run appendix_a $B/bin/test_appendix_a
  run errors $B/bin/test_errors
  run random $B/bin/test_random_programs
  run threads $B/bin/test_threads_and_lifetimes
  run on_ready $B/bin/test_on_ready
  run callback_worth $B/bin/test_callback_worth
  # The example's case starts a child process that opens the GPU: in a process of its own, as the CLI
  # case below (a child found no NVIDIA device once its parent had used it, 2026-11-26 16:44Z).
  run flow_nodes $B/bin/test_flow_nodes --test-case-exclude="the join pipeline example*"
  run flow_nodes_example $B/bin/test_flow_nodes --test-case="the join pipeline example*"
  run flow_one_worker $B/bin/test_flow_nodes_one_worker
  run no_spinning $B/bin/test_no_spinning
  # The host has no Oclgrind: its case runs here only.
  run flush_policy $B/bin/test_flush_policy --test-case-exclude="on Oclgrind*"
  run queue_order $B/bin/test_queue_order
  # Transfers alternating between the copy queues are retired while more are enqueued (4ca94ec).
  run soak_alternating $B/bin/test_soak --test-case="*alternating*"
  run loop_workloads $B/bin/test_loop_workloads
  # The CLI case in a process of its own: a child `hetflow run` found no NVIDIA platform once this
  # test process had used the GPU (two runs, 2026-11-23), and found it when run alone.
  run parallel_for $B/bin/test_parallel_for --test-case-exclude="hetflow run*"
  run parallel_for_cli $B/bin/test_parallel_for --test-case="hetflow run*"
  # Device faults (docs/drivers.md): injected, in-process; then real ones, one process each.
  run faults_injected $B/bin/test_device_faults --test-case-exclude="*process of its own*"
  for cfg in "async 1" "async 3" "sync 1"; do run "device_fault_${cfg// /_}" $B/bin/device_fault $cfg; done
  HETFLOW_DEBUG_STEPS_ON_WORKERS=1 run device_fault_on_workers $B/bin/device_fault async 1
  run device_memory $B/bin/device_memory 4 64
  [ -x $B/bin/device_fault_probe ] && run device_fault_probe $B/bin/device_fault_probe wait
  # The host's PoCL (5.0, 16 cores): the kernel-cache guard (docs/drivers.md).
  export HETFLOW_DEVICE=portable
  [ "${QUICK:-0}" = 1 ] || run pocl_concurrent $B/bin/test_concurrent_launches
  repeat pocl_banded_200 200 $B/bin/banded_heat 1 1
  if [ "${QUICK:-0}" != 1 ]; then
    HETFLOW_DEBUG_UNGUARDED_KERNEL_CACHE=1 repeat pocl_banded_unguarded 20 $B/bin/banded_heat 1 1
    [ -x $B/bin/pocl_dlhandle_race ] && repeat pocl_plain_reproducer 100 $B/bin/pocl_dlhandle_race
  fi
  run pocl_random $B/bin/test_random_programs
  run pocl_errors $B/bin/test_errors
  run pocl_flow_nodes $B/bin/test_flow_nodes
  run pocl_flow_one_worker $B/bin/test_flow_nodes_one_worker
  run pocl_no_spinning $B/bin/test_no_spinning
  run pocl_flush_policy $B/bin/test_flush_policy --test-case-exclude="on Oclgrind*"
  run pocl_queue_order $B/bin/test_queue_order
  run pocl_callback_worth $B/bin/test_callback_worth
  unset HETFLOW_DEVICE
fi

# Sobel at the papers' sizes with the default slots (4) and host threads (all cores), then 16K with
# other slot and host-thread counts (3 repeats each, so the part fits one 10-minute device call).
sobel_bench() {
  run sobel_4k $B/bin/bench_workloads sobel 4k 100 5
  run sobel_8k $B/bin/bench_workloads sobel 8k 100 5
  run sobel_16k $B/bin/bench_workloads sobel 16k 100 5
  for slots in 2 6; do run "sobel_16k_slots$slots" $B/bin/bench_workloads sobel 16k 100 3 --slots $slots; done
  run sobel_16k_threads8 $B/bin/bench_workloads sobel 16k 100 3 --host-threads 8
}

if [ "$PART" != all ] && has sobel; then
  export HETFLOW_DEVICE=nvidia
  sobel_bench
  run demo $B/bin/hetflow run sobel --size 16k --frames 100 --verify
  # Where 4K frames wait (perf/RESULTS.md, 2026-11-26 07:53Z): the lanes over the timed frames.
  run sobel_4k_trace $B/bin/hetflow run sobel --size 4k --frames 60 --policy async --repeat 1 --trace "$L/sobel_4k.trace.json"
  run sobel_4k_report $B/bin/hetflow report --from "generate frame 0" "$L/sobel_4k.trace.json"
  echo; echo "===== tables"; grep -h -A3 "median of" "$L"/sobel_*.log; grep -h -A4 "^lane" "$L/sobel_4k_report.log"
fi

if [ "$PART" = bench ] || [ "$PART" = all ]; then
  export HETFLOW_DEVICE=nvidia
  run enqueue_cost $B/bin/bench_enqueue_cost 40
  run driver_calls $B/bin/bench_driver_calls 20000 5
  run copy_concurrency $B/bin/bench_copy_concurrency 64 64
  run overhead_nvidia $B/bin/bench_overhead 20000 7
  [ -x $B/bin/bench_peers_overhead ] && run peers_overhead_nvidia $B/bin/bench_peers_overhead 5000 5
  if [ -x $B/bin/bench_peers_workloads ]; then
    # StarPU's performance models go to STARPU_HOME (the warm-up round calibrates them there).
    export STARPU_HOME=/tmp/hetflow-starpu-home
    run peers_sobel_4k $B/bin/bench_peers_workloads sobel 4k 100 5
    run peers_jacobi $B/bin/bench_peers_workloads jacobi 16384 300 3
    # StarPU's idle CPU workers spin (Debian builds it with non-blocking drivers): with one per core
    # they compete with the host tasks' own TBB threads; the same with two.
    STARPU_NCPU=2 run peers_sobel_4k_ncpu2 $B/bin/bench_peers_workloads sobel 4k 100 3 lws,dmda,dmdas
  fi
  HETFLOW_DEVICE=portable run overhead_pocl $B/bin/bench_overhead 20000 7
  HETFLOW_DEVICE=portable run banded_pocl $B/bin/bench_banded 1024 8 20 7
  sobel_bench
  run jacobi $B/bin/bench_workloads jacobi 16384 300 5
  run matpow $B/bin/bench_workloads matpow 8192 10 5
  run trace $B/bin/hetflow run sobel --size 16k --frames 3 --policy async --trace "$OUT/sobel16k-3frames.trace.json" --dump "$OUT/sobel16k-3frames.dump.json"
  $B/bin/hetflow report "$OUT/sobel16k-3frames.trace.json" > "$L/sobel16k-3frames.report.txt" 2>&1
  run demo $B/bin/hetflow run sobel --size 16k --frames 100 --verify
  # Where 4K frames wait (perf/RESULTS.md, 2026-11-26 07:53Z): the lanes over the timed frames.
  run sobel_4k_trace $B/bin/hetflow run sobel --size 4k --frames 60 --policy async --repeat 1 --trace "$L/sobel_4k.trace.json"
  run sobel_4k_report $B/bin/hetflow report --from "generate frame 0" "$L/sobel_4k.trace.json"
  echo; echo "===== tables"; grep -h -A3 "median of" "$L"/sobel_*.log; grep -h -A4 "^lane" "$L/sobel_4k_report.log" "$L"/jacobi.log "$L"/matpow.log
  grep -h -A4 "perf/overhead" "$L"/overhead_*.log
  grep -h -A12 "after a warm-up round" "$L"/peers_*.log
  grep -h -A6 "perf/banded" "$L"/banded_pocl.log
  tail -n 9 "$L/copy_concurrency.log"
fi
if has flow; then
  export HETFLOW_DEVICE=nvidia
  run flow_graph_8k $B/bin/bench_flow_graph 8k 100 5 2,4
  run flow_graph_16k $B/bin/bench_flow_graph 16k 100 5 2,4
  echo; echo "===== flow tables"; grep -h -A4 "median of" "$L"/flow_graph_*.log
fi
if has loops; then
  export HETFLOW_DEVICE=nvidia
  run loops_barneshut $B/bin/bench_loops barneshut 1000000 9 16384 --fast-math
  run loops_spmv $B/bin/bench_loops spmv 22 9
  run loops_nbody $B/bin/bench_loops nbody 32768 6 512 --fast-math
  run loops_mandelbrot $B/bin/bench_loops mandelbrot 4096 9
  run loop_tokens $B/bin/bench_loop_tokens 20 65536 1024 3
  run chunk_overhead $B/bin/bench_chunk_overhead 1048576 4096 9
  echo; echo "===== loop tables"; grep -h -A10 "calls each" "$L"/loops_*.log; tail -n 4 "$L/loop_tokens.log"
  tail -n 7 "$L/chunk_overhead.log"
fi
if [ "$PART" != all ] && has idleflush; then
  export HETFLOW_DEVICE=nvidia
  $B/bin/hetflow devices > /dev/null
  HETFLOW_LOG=info $B/bin/hetflow run sobel --frames 2 --policy async 2>&1 | grep -o "idle flush .*" | tee -a "$L/summary.txt"
  for round in 1 2 3; do
    for v in 1 0; do
      HETFLOW_DEBUG_IDLE_FLUSH=$v run "overhead_idleflush${v}_r$round" $B/bin/bench_overhead 20000 5
      [ -x $B/bin/bench_peers_overhead ] &&
        HETFLOW_DEBUG_IDLE_FLUSH=$v run "peers_overhead_idleflush${v}_r$round" $B/bin/bench_peers_overhead 5000 5
    done
  done
  echo; echo "===== idle flush A/B (1: kept, 0: the check's verdict)"
  for f in "$L"/overhead_idleflush*.log "$L"/peers_overhead_idleflush*.log; do
    [ -f "$f" ] && { echo "-- $(basename "$f" .log)"; grep -E "^empty kernel |^4-byte H2D|round trip  |^sync: blocking|OpenCL kernel|CPU task" "$f" | head -6; }
  done
fi
if has loopdevices; then
  # One loop over several devices: the H200 and the host's PoCL as two devices, then two
  # controllers on the one H200 (what a second GPU would add is not seen there).
  unset HETFLOW_DEVICE
  HETFLOW_LOOP_DEVICES=nvidia,portable run loopdev_barneshut $B/bin/bench_loops barneshut 1000000 6 --fast-math
  HETFLOW_LOOP_DEVICES=nvidia,portable run loopdev_spmv $B/bin/bench_loops spmv 22 6
  HETFLOW_LOOP_DEVICES=nvidia,nvidia run loopdev_twice_barneshut $B/bin/bench_loops barneshut 1000000 6 --fast-math
  HETFLOW_DEVICE=nvidia run loopdev_tests $B/bin/test_parallel_for_devices
  echo; echo "===== loop device tables"; grep -h -A14 "calls each" "$L"/loopdev_*.log
fi
if has twogpu; then
  # The GPUs' platform:device selections, from `hetflow devices`.
  unset HETFLOW_DEVICE
  mapfile -t gpus < <($B/bin/hetflow devices | awk '/ GPU /{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+:[0-9]+$/) {print $i; break}}')
  if [ "${#gpus[@]}" -ge 2 ]; then
    two="${gpus[0]},${gpus[1]}"
    log "twogpu: $two"
    HETFLOW_DEVICE=${gpus[0]} HETFLOW_TEST_SECOND_DEVICE=${gpus[1]} run twogpu_tests $B/bin/test_parallel_for_devices
    # LogFit may take a sample a call to learn a GPU whose notice came late (tests/
    # test_loop_schedulers_devices.cpp, "one late notice"): enough calls that the medians (the last
    # two thirds) show where it settles; N-body also at a size the GPUs are nearer to filling.
    HETFLOW_LOOP_DEVICES=$two run twogpu_barneshut $B/bin/bench_loops barneshut 1000000 12 --fast-math
    HETFLOW_LOOP_DEVICES=$two run twogpu_spmv $B/bin/bench_loops spmv 22 6
    HETFLOW_LOOP_DEVICES=$two run twogpu_nbody $B/bin/bench_loops nbody 65536 24 --fast-math
    HETFLOW_LOOP_DEVICES=$two run twogpu_nbody128k $B/bin/bench_loops nbody 131072 9 --fast-math
    echo; echo "===== two-GPU loop tables"; grep -h -A14 "calls each" "$L"/twogpu_*.log
  else
    log "twogpu: fewer than two GPUs here (${gpus[*]})"
  fi
fi
if has peerloops; then
  if [ -x $B/bin/bench_peers_loops ]; then
    export HETFLOW_DEVICE=nvidia STARPU_HOME=/tmp/hetflow-starpu-home
    run peers_loops_barneshut $B/bin/bench_peers_loops barneshut 1000000 9 16384 2 --fast-math
    echo; echo "===== StarPU loop table"; grep -h -A10 "calls per round" "$L"/peers_loops_*.log
  else
    log "peerloops: no $B/bin/bench_peers_loops (the bundle was built without StarPU, libstarpu-dev)"
  fi
fi
echo; echo "===== summary"; grep -E "^== |rc=|test cases| ok, " "$L/summary.txt"
tar czf "$OUT/logs.tgz" -C "$L" .
cp "$L/summary.txt" "$OUT/"
