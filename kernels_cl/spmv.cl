// CSR SpMV (tools/workloads/spmv_loop.hpp), a row per SPMV_LANES work-items: lane l adds the products
// of the row's nonzeros l, l + SPMV_LANES, ... in column order, then the lanes' partial sums are added
// pairwise (lane l + step into lane l, step = SPMV_LANES / 2, ..., 1). A row per work-item made a chunk
// last as long as its heaviest row on one work-item: R-MAT's first row holds ~160,000 nonzeros, 7.8 ms
// on an H200 whatever the chunk's size (perf/RESULTS.md, 2026-11-25 23:53Z). The CPU body adds in the
// same order, and contraction is off on both sides, so y is bit-identical.
#pragma OPENCL FP_CONTRACT OFF
#define SPMV_LANES 32
#define SPMV_GROUP 64  // two rows per work-group: the loop launches its chunks with a local size of 64

__kernel __attribute__((reqd_work_group_size(SPMV_GROUP, 1, 1))) void spmv_csr(
    __global const int* row_ptr, __global const int* cols, __global const float* vals, __global const float* x,
    __global float* y, int limit) {
  __local float partial[SPMV_GROUP];
  const int lid = get_local_id(0);
  const int lane = lid % SPMV_LANES;  // the chunk's offset is a multiple of SPMV_LANES
  const size_t row = get_global_id(0) / SPMV_LANES;
  float s = 0.0f;
  if (row < (size_t)limit) {  // past it: the rounding of the chunk up to whole work-groups
    const int end = row_ptr[row + 1];
    for (int k = row_ptr[row] + lane; k < end; k += SPMV_LANES) s = s + vals[k] * x[cols[k]];
  }
  partial[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);  // every work-item reaches each barrier, also past the limit
  for (int step = SPMV_LANES / 2; step > 0; step /= 2) {
    if (lane < step) partial[lid] = partial[lid] + partial[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lane == 0 && row < (size_t)limit) y[row] = partial[lid];
}

// The same sums, a row per work-item, its lanes in private memory: for CPU devices (PoCL), where a
// work-group's barriers cost more than its 32 lanes gain (5x slower on this project's machine).
__kernel void spmv_csr_serial(__global const int* row_ptr, __global const int* cols, __global const float* vals,
                              __global const float* x, __global float* y, int limit) {
  const size_t row = get_global_id(0);
  if (row >= (size_t)limit) return;  // the chunk is rounded up to the work-group size
  float lane[SPMV_LANES];
  for (int l = 0; l < SPMV_LANES; ++l) lane[l] = 0.0f;
  const int begin = row_ptr[row], end = row_ptr[row + 1];
  for (int base = begin; base < end; base += SPMV_LANES)
    for (int l = 0; l < SPMV_LANES && base + l < end; ++l) lane[l] = lane[l] + vals[base + l] * x[cols[base + l]];
  for (int step = SPMV_LANES / 2; step > 0; step /= 2)
    for (int l = 0; l < step; ++l) lane[l] = lane[l] + lane[l + step];
  y[row] = lane[0];
}
