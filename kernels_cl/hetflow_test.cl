// Kernels for hetflow's own validation tests (docs/architecture.md, "Validation cases").

// Copies a into b `repeat` times over, in one work-group: the length grows with n * repeat while
// only one compute unit is busy, so transfers on other queues find a free one (PoCL runs one
// work-group per worker thread).
__kernel void copy_loop(__global const float* a, __global float* b, int n, int repeat) {
  const int lid = get_local_id(0), lsz = get_local_size(0);
  float acc = 0.0f;
  for (int r = 1; r < repeat; ++r)
    for (int i = lid; i < n; i += lsz) acc += a[i] * 1e-30f;
  // acc - acc is 0 for any finite acc, and the compiler may not drop the loop above without
  // fast-math, since it cannot prove acc finite.
  for (int i = lid; i < n; i += lsz) b[i] = a[i] + (acc - acc);
}

// Mixes its inputs into its output deterministically (the randomized differential test).
__kernel void mix_inputs(__global const float* x, __global const float* y, __global float* out, int n, float k) {
  const int i = get_global_id(0);
  if (i < n) out[i] = x[i] * 0.5f + y[i] * 0.25f + k;
}

__kernel void scale_in_place(__global float* x, int n, float factor) {
  const int i = get_global_id(0);
  if (i < n) x[i] = x[i] * factor + 1.0f;
}

__kernel void empty_kernel(__global float* x) { (void)x; }
