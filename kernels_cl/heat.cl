// Heat diffusion (tools/workloads/banded_heat.hpp). One Jacobi heat step on the rows of the launch's global range (its offset picks the band), with
// fixed borders. (a + b + c + d) * 0.25f leaves no multiply-add to contract, so the host's
// reference is bit-identical.
__kernel void heat_step(__global const float* src, __global float* dst, int w, int h) {
  const int x = get_global_id(0), y = get_global_id(1);
  if (x >= w || y >= h) return;
  const int i = y * w + x;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
    dst[i] = src[i];
    return;
  }
  dst[i] = (src[i - 1] + src[i + 1] + src[i - w] + src[i + w]) * 0.25f;
}
