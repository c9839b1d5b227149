# Sourced by the two-GPU loop scripts (perf/spmv-two-gpu-splits.sh, perf/loops-two-gpus.sh), with
# B set to the bundle: NVIDIA's ICD registered as perf/run-gpu.sh does, and `median`, which reads a
# `hetflow run` loop table and prints the median of calls 2-7 of 8 (the first two are learning).
export LD_LIBRARY_PATH=$B/lib HETFLOW_KERNEL_PATH=$B/kernels_cl
mkdir -p /tmp/vendors; cp /etc/OpenCL/vendors/*.icd /tmp/vendors/ 2>/dev/null
echo libnvidia-opencl.so.1 > /tmp/vendors/nvidia.icd; export OCL_ICD_VENDORS=/tmp/vendors
median() { grep -E '^[0-9]+ +[0-9.]+ ' | awk 'NR>2{print $2}' | sort -n | awk '{a[NR]=$1}END{print a[int((NR+1)/2)]}'; }
