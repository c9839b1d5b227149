// One Jacobi relaxation step of the 4-point stencil on an n x n float grid, row-major
// (index y*n + x):
//   interior:  out = 0.25f * (((up + down) + left) + right)
//   boundary (first/last row or column): out = in (fixed Dirichlet values)
//
// Launch with global size (round_up(n, 16), round_up(n, 16)) and local size (16, 16); dimension 0
// is x (the fastest index), dimension 1 is y. Work-items past the grid return at once.
// `in` and `out` must be different buffers (ping-pong between two grids).

__kernel void jacobi_step(__global const float* in, __global float* out, int n) {
  const int x = (int)get_global_id(0);
  const int y = (int)get_global_id(1);
  if (x >= n || y >= n) return;
  const size_t w = (size_t)n;
  const size_t i = (size_t)y * w + (size_t)x;
  if (x == 0 || y == 0 || x == n - 1 || y == n - 1) {
    out[i] = in[i];
    return;
  }
  const float up = in[i - w];
  const float down = in[i + w];
  const float left = in[i - 1];
  const float right = in[i + 1];
  out[i] = 0.25f * (((up + down) + left) + right);
}
