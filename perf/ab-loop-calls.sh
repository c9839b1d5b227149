#!/usr/bin/env bash
# Two builds of libhetflow side by side on one host, alternated in rounds so machine noise hits
# both (perf/RESULTS.md): `hetflow run LOOP ...` per loop, the median of each run's calls after its
# first third (LogFit learns there) and its last call's line (the shares). The same hetflow binary
# runs on both libraries (the public headers must not differ between them; perf/ab-libs.sh says why).
#   bash perf/ab-loop-calls.sh ROUNDS BUNDLE OLD_LIB_DIR NEW_LIB_DIR
# BUNDLE: a bundle (perf/make-bundle.sh) whose bin/hetflow, lib/ and kernels_cl/ are used; each
# LIB_DIR holds libhetflow.so.0 and goes first on LD_LIBRARY_PATH. Logs go to $OUT/logs when OUT is
# set. Optional: AB_RUNS, runs separated by ';', each NAME=ARGS of `hetflow run` (default: the
# two-GPU and one-GPU loops of perf/RESULTS.md, 2026-11-26 22:08Z; they need NVIDIA at platform 1,
# as perf/run-gpu.sh registers it).
set -u
rounds=${1:?usage: ab-loop-calls.sh ROUNDS BUNDLE OLD_LIB_DIR NEW_LIB_DIR}
B=${2:?usage} old=${3:?usage} new=${4:?usage}
default_runs="mandel8192-2gpu=mandelbrot --size 8192 --calls 12 --devices 1:0,1:1"
default_runs+=";spmv24-2gpu=spmv --size 24 --calls 12 --devices 1:0,1:1"
default_runs+=";bh4M-2gpu=barneshut --size 4000000 --fast-math --calls 9 --devices 1:0,1:1"
default_runs+=";nbody256K-2gpu=nbody --size 262144 --fast-math --calls 6 --devices 1:0,1:1"
default_runs+=";mandel8192-1gpu=mandelbrot --size 8192 --calls 12 --device 1:0"
default_runs+=";spmv22-1gpu=spmv --size 22 --calls 12 --device 1:0"
default_runs+=";bh1M-1gpu=barneshut --size 1000000 --fast-math --calls 9 --device 1:0"
IFS=';' read -r -a runs <<< "${AB_RUNS:-$default_runs}"
logs=${OUT:-/tmp}/logs
mkdir -p "$logs"
export HETFLOW_KERNEL_PATH=$B/kernels_cl
if [ -e /etc/OpenCL/vendors ] && command -v nvidia-smi > /dev/null; then  # as perf/run-gpu.sh
  mkdir -p /tmp/vendors
  cp /etc/OpenCL/vendors/*.icd /tmp/vendors/ 2>/dev/null
  echo libnvidia-opencl.so.1 > /tmp/vendors/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/vendors
fi
date -u +%Y-%m-%dT%H:%MZ
one() {  # NAME LIB_DIR LABEL ARGS...
  local name=$1 lib=$2 label=$3
  shift 3
  local log="$logs/${name}_${label}_r$round.log"
  # shellcheck disable=SC2068  # the run's arguments, split on purpose
  LD_LIBRARY_PATH="$lib:$B/lib" timeout 150 "$B/bin/hetflow" run $@ > "$log" 2>&1
  local rc=$? rows n
  rows=$(grep -E '^[0-9]+ +[0-9.]+ ' "$log")
  n=$(printf '%s\n' "$rows" | grep -c .)
  local median
  median=$(printf '%s\n' "$rows" | tail -n +$((n / 3 + 1)) | awk '{print $2}' | sort -n |
    awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}')
  printf '%-16s %-4s rc=%d median %s | last: %s\n' "$name" "$label" "$rc" "$median" "$(printf '%s\n' "$rows" | tail -1)"
}
for round in $(seq "$rounds"); do
  for side in old new; do
    lib=$old
    [ "$side" = new ] && lib=$new
    for r in "${runs[@]}"; do one "${r%%=*}" "$lib" "$side" "${r#*=}"; done
  done
done
