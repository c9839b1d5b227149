// Mandelbrot by rows (tools/workloads/mandelbrot_loop.hpp): work-item (x, y) writes the escape count
// of pixel (x, y); a chunk of rows is the launch's y range and offset. Contraction off: a fused
// multiply-add would round differently from the host's separate multiply and add, and near the
// set's boundary one rounding changes the count.
#pragma OPENCL FP_CONTRACT OFF
__kernel void mandelbrot_rows(__global int* counts, int width, float x0, float y0, float dx, float dy,
                              int max_iter) {
  const int x = get_global_id(0), y = get_global_id(1);
  if (x >= width) return;  // the x range is rounded up to the work-group size
  const float cr = x0 + (float)x * dx, ci = y0 + (float)y * dy;
  float zr = 0.0f, zi = 0.0f;
  int it = 0;
  while (it < max_iter) {
    const float zr2 = zr * zr, zi2 = zi * zi;
    if (zr2 + zi2 > 4.0f) break;
    const float t = zr * zi;
    zi = (t + t) + ci;
    zr = (zr2 - zi2) + cr;
    ++it;
  }
  counts[(size_t)y * width + x] = it;
}
