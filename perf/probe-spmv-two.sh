#!/usr/bin/env bash
# Where SpMV over two GPUs loses its time: traces of both controllers and the cross-context copy probe.
set -uo pipefail
B=${1:-bundle}
export LD_LIBRARY_PATH=$B/lib HETFLOW_KERNEL_PATH=$B/kernels_cl
mkdir -p /tmp/vendors; cp /etc/OpenCL/vendors/*.icd /tmp/vendors/ 2>/dev/null
echo libnvidia-opencl.so.1 > /tmp/vendors/nvidia.icd; export OCL_ICD_VENDORS=/tmp/vendors
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvidia-smi topo -m | head -5
$B/bin/cross_context_pinned_probe 64 5
$B/bin/cross_context_pinned_probe 256 3
HETFLOW_TRACE=$OUT/two.json $B/bin/hetflow run spmv --devices 1:0,1:1 --size 24 --calls 12 > $OUT/two.txt 2>&1
tail -8 $OUT/two.txt
HETFLOW_TRACE=$OUT/one.json $B/bin/hetflow run spmv --device 1:0 --scheduler static:1 --size 24 --calls 8 > $OUT/one.txt 2>&1
tail -5 $OUT/one.txt
for f in $OUT/*.json; do echo "== $f"; $B/bin/hetflow report $f 2>&1 | head -30; done
ls -la $OUT
