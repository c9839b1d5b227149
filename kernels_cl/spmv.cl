// CSR SpMV, one row per work-item (tools/workloads/spmv_loop.hpp): y[i] = sum over row i's nonzeros
// in column order. Contraction off: the host adds each product rounded, and so must the device for
// y to be bit-identical.
#pragma OPENCL FP_CONTRACT OFF
__kernel void spmv_csr(__global const int* row_ptr, __global const int* cols, __global const float* vals,
                       __global const float* x, __global float* y, int limit) {
  const int i = get_global_id(0);
  if (i >= limit) return;  // the chunk is rounded up to the work-group size; the tail is the next chunk's
  float s = 0.0f;
  const int end = row_ptr[i + 1];
  for (int k = row_ptr[i]; k < end; ++k) s = s + vals[k] * x[cols[k]];
  y[i] = s;
}
