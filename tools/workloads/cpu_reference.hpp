// CPU references, exact inputs and host-side reductions of the three workloads (Sobel, Jacobi,
// matrix power). The engine versions, the hand-written native OpenCL versions (perf/native/) and
// the tests all take their inputs and host reductions from here, so their results can be compared
// bit for bit.
#pragma once
#include <cstddef>
#include <limits>
#include <vector>

namespace hetflow::workloads {

// ---- launch geometry of kernels_cl/matmul.cl with its default macros --------------------------
// matmul_tiled is launched with global (n, n / kMatmulWpt) and local (kMatmulTile,
// kMatmulTile / kMatmulWpt); n must be a multiple of kMatmulTile. These mirror the defaults of
// TILE and WPT in matmul.cl (the kernel also states its local size through
// reqd_work_group_size, readable as CL_KERNEL_COMPILE_WORK_GROUP_SIZE; the tests check both agree).
inline constexpr int kMatmulTile = 16;
inline constexpr int kMatmulWpt = 4;
// Sobel and Jacobi kernels: local (16, 16), global rounded up to a multiple of 16 in each dimension.
inline constexpr int kStencilLocal = 16;
inline constexpr std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

// ---- references ---------------------------------------------------------------------------------
// Separable Sobel with clamp-to-edge borders, in the same float operation order as sobel.cl:
//   rd = in[x+1] - in[x-1];  rs = (in[x-1] + 2 in[x]) + in[x+1]
//   gx = (rd[y-1] + 2 rd[y]) + rd[y+1];  gy = rs[y+1] - rs[y-1];  out = sqrt(gx^2 + gy^2)
// `in` and `out` are width*height floats, row-major; they must not overlap.
void sobel_reference(const float* in, float* out, int width, int height);

// `iterations` Jacobi steps of jacobi.cl (interior: 0.25f*(((up+down)+left)+right), boundary
// copied) on the n x n grid, ping-ponging between `grid` and a scratch grid; the final grid is
// left in `grid`. Bit-identical to the kernel on devices that evaluate float as float.
void jacobi_reference(std::vector<float>& grid, int n, int iterations);

// C = A * B (n x n, row-major), accumulated in double and stored as float. C must not alias A/B.
void matmul_reference(const float* A, const float* B, float* C, int n);

// ---- host reductions ------------------------------------------------------------------------------
// Both run in parallel on the TBB arena of the calling thread (memory-bound: one core is too slow
// for 16K frames) with a fixed association order, so the result is the same bit for bit whatever
// the number of threads.
// Sum of `count` floats, accumulated in double. The "host consumption" of the Sobel and Jacobi
// workloads (what their checksums add up).
double host_sum(const float* data, std::size_t count);
// sqrt(sum of squares), accumulated in double: the host-side norm of the matrix-power workload.
double frobenius_norm(const float* m, std::size_t count);

// ---- comparison helpers ---------------------------------------------------------------------------
// max_i |got[i] - ref[i]| / max_i |ref[i]| (the absolute error when ref is all zeros). Returns
// +infinity when `got` holds a NaN or an infinity where `ref` is finite.
double max_rel_error(const float* got, const float* ref, std::size_t count);
inline double max_rel_error(const std::vector<float>& got, const std::vector<float>& ref) {
  return got.size() != ref.size() ? std::numeric_limits<double>::infinity()
                                  : max_rel_error(got.data(), ref.data(), got.size());
}
// Number of elements whose bit patterns differ (0 means bit-identical).
std::size_t count_bit_differences(const float* a, const float* b, std::size_t count);

// ---- the exact inputs ------------------------------------------------------------------------------
// Jacobi: n x n grid (resized here); boundary: top row 1.0f, the other three sides 0.0f;
// interior: a deterministic pattern in [0, 0.5).
void jacobi_initial_grid(std::vector<float>& grid, int n);
// Matrix power: n x n matrix A (resized here) of deterministic pseudo-random values, uniform in
// [-1, 1) scaled by sqrt(3/n): entry variance 1/n, so the spectral radius of A is about 1 and the
// powers A^k neither overflow nor underflow over tens of products.
void matpow_input(std::vector<float>& A, int n);

}  // namespace hetflow::workloads
