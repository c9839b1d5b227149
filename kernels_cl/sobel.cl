// Separable Sobel filter on float frames of width x height, row-major (index y*width + x).
// Borders are clamp-to-edge.
//
//   Gx = [1 2 1]^T (column smooth) * [-1 0 1] (row difference)
//   Gy = [-1 0 1]^T (column difference) * [1 2 1] (row smooth)
//   out = sqrt(Gx^2 + Gy^2)
//
// Pipeline per frame (all buffers width*height floats):
//   sobel_rows       (in)             -> row_diff, row_smooth
//   sobel_col_smooth (row_diff)       -> gx
//   sobel_col_diff   (row_smooth)     -> gy
//   sobel_magnitude  (gx, gy)         -> out
//
// Launch every kernel with global size (round_up(width, 16), round_up(height, 16)) and local size
// (16, 16); dimension 0 is x (the fastest index, so each work-group row reads and writes
// contiguous memory), dimension 1 is y. Work-items past the frame return at once.
//
// Each work-item loads its own element and its two neighbours; the neighbours are the
// neighbouring work-items' own elements, so they come from the cache, not from DRAM: every kernel
// moves the minimum (one read per input, one write per output).

__kernel void sobel_rows(__global const float* in, __global float* row_diff, __global float* row_smooth,
                         int width, int height) {
  const int x = (int)get_global_id(0);
  const int y = (int)get_global_id(1);
  if (x >= width || y >= height) return;
  const size_t row = (size_t)y * (size_t)width;
  const float l = in[row + (size_t)max(x - 1, 0)];
  const float c = in[row + (size_t)x];
  const float r = in[row + (size_t)min(x + 1, width - 1)];
  row_diff[row + (size_t)x] = r - l;
  row_smooth[row + (size_t)x] = (l + 2.0f * c) + r;
}

__kernel void sobel_col_smooth(__global const float* row_diff, __global float* gx, int width, int height) {
  const int x = (int)get_global_id(0);
  const int y = (int)get_global_id(1);
  if (x >= width || y >= height) return;
  const size_t w = (size_t)width;
  const float u = row_diff[(size_t)max(y - 1, 0) * w + (size_t)x];
  const float c = row_diff[(size_t)y * w + (size_t)x];
  const float d = row_diff[(size_t)min(y + 1, height - 1) * w + (size_t)x];
  gx[(size_t)y * w + (size_t)x] = (u + 2.0f * c) + d;
}

__kernel void sobel_col_diff(__global const float* row_smooth, __global float* gy, int width, int height) {
  const int x = (int)get_global_id(0);
  const int y = (int)get_global_id(1);
  if (x >= width || y >= height) return;
  const size_t w = (size_t)width;
  const float u = row_smooth[(size_t)max(y - 1, 0) * w + (size_t)x];
  const float d = row_smooth[(size_t)min(y + 1, height - 1) * w + (size_t)x];
  gy[(size_t)y * w + (size_t)x] = d - u;
}

__kernel void sobel_magnitude(__global const float* gx, __global const float* gy, __global float* out, int width,
                              int height) {
  const int x = (int)get_global_id(0);
  const int y = (int)get_global_id(1);
  if (x >= width || y >= height) return;
  const size_t i = (size_t)y * (size_t)width + (size_t)x;
  const float a = gx[i];
  const float b = gy[i];
  out[i] = sqrt(a * a + b * b);
}
