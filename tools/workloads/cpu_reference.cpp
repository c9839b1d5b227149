#include "workloads/cpu_reference.hpp"

#include "workloads/hash.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace hetflow::workloads {

namespace {

// Row pass of the separable Sobel for one row: rd = r - l, rs = (l + 2c) + r, x clamped.
void sobel_row_pass(const float* in, float* rd, float* rs, int width) {
  for (int x = 0; x < width; ++x) {
    const float l = in[std::max(x - 1, 0)];
    const float c = in[x];
    const float r = in[std::min(x + 1, width - 1)];
    rd[x] = r - l;
    rs[x] = (l + 2.0f * c) + r;
  }
}

// Eight independent partial sums combined in a fixed order: deterministic, and fast enough for
// the host tasks of the benchmarks (the dependency chain of a single accumulator is not).
template <class F>
double blocked_sum(const float* data, std::size_t count, F f) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += f(static_cast<double>(data[i + j]));
  for (int j = 0; i < count; ++i, ++j) acc[j] += f(static_cast<double>(data[i]));
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// The data is cut into fixed chunks of kChunk elements, each summed by blocked_sum on whatever
// thread TBB gives it, and the chunk sums are added in chunk order: the result depends only on the
// data, never on the number of threads or the schedule. Parallel because one core's memory
// bandwidth is the limit: on the GPU host's VM one core sums a 16K frame (531 MB) in 73 ms.
constexpr std::size_t kChunk = std::size_t{1} << 16;

template <class F>
double chunked_sum(const float* data, std::size_t count, F f) {
  const std::size_t chunks = (count + kChunk - 1) / kChunk;
  if (chunks <= 1) return blocked_sum(data, count, f);
  std::vector<double> partial(chunks);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks), [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t c = r.begin(); c != r.end(); ++c) {
      const std::size_t begin = c * kChunk;
      partial[c] = blocked_sum(data + begin, std::min(kChunk, count - begin), f);
    }
  });
  double total = 0.0;
  for (double v : partial) total += v;
  return total;
}

}  // namespace

void sobel_reference(const float* in, float* out, int width, int height) {
  if (width <= 0 || height <= 0) return;
  const std::size_t w = static_cast<std::size_t>(width);
  // Row-pass results of three consecutive rows at a time (a ring keyed by row index), so the
  // reference needs O(width) scratch memory even for 16K frames.
  std::vector<float> rd(3 * w), rs(3 * w);
  int cached[3] = {-1, -1, -1};
  auto rows_of = [&](int yy) -> std::pair<const float*, const float*> {
    const int slot = yy % 3;
    if (cached[slot] != yy) {
      sobel_row_pass(in + static_cast<std::size_t>(yy) * w, &rd[slot * w], &rs[slot * w], width);
      cached[slot] = yy;
    }
    return {&rd[slot * w], &rs[slot * w]};
  };
  for (int y = 0; y < height; ++y) {
    const auto [rd_u, rs_u] = rows_of(std::max(y - 1, 0));
    const auto [rd_c, rs_c] = rows_of(y);
    const auto [rd_d, rs_d] = rows_of(std::min(y + 1, height - 1));
    (void)rs_c;
    float* o = out + static_cast<std::size_t>(y) * w;
    for (int x = 0; x < width; ++x) {
      const float gx = (rd_u[x] + 2.0f * rd_c[x]) + rd_d[x];
      const float gy = rs_d[x] - rs_u[x];
      o[x] = std::sqrt(gx * gx + gy * gy);
    }
  }
}

void jacobi_reference(std::vector<float>& grid, int n, int iterations) {
  if (n <= 0) return;
  const std::size_t w = static_cast<std::size_t>(n);
  std::vector<float> next(grid.size());
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t y = 0; y < w; ++y) {
      for (std::size_t x = 0; x < w; ++x) {
        const std::size_t i = y * w + x;
        if (x == 0 || y == 0 || x == w - 1 || y == w - 1) {
          next[i] = grid[i];
        } else {
          const float up = grid[i - w];
          const float down = grid[i + w];
          const float left = grid[i - 1];
          const float right = grid[i + 1];
          next[i] = 0.25f * (((up + down) + left) + right);
        }
      }
    }
    grid.swap(next);
  }
}

void matmul_reference(const float* A, const float* B, float* C, int n) {
  if (n <= 0) return;
  const std::size_t w = static_cast<std::size_t>(n);
  std::vector<double> row(w);
  for (std::size_t i = 0; i < w; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (std::size_t k = 0; k < w; ++k) {
      const double a = A[i * w + k];
      const float* b = B + k * w;
      for (std::size_t j = 0; j < w; ++j) row[j] += a * static_cast<double>(b[j]);
    }
    for (std::size_t j = 0; j < w; ++j) C[i * w + j] = static_cast<float>(row[j]);
  }
}

double host_sum(const float* data, std::size_t count) {
  return chunked_sum(data, count, [](double v) { return v; });
}

double frobenius_norm(const float* m, std::size_t count) {
  return std::sqrt(chunked_sum(m, count, [](double v) { return v * v; }));
}

double max_rel_error(const float* got, const float* ref, std::size_t count) {
  double max_ref = 0.0, max_err = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double r = ref[i], g = got[i];
    if (std::isfinite(r) && !std::isfinite(g)) return std::numeric_limits<double>::infinity();
    max_ref = std::max(max_ref, std::fabs(r));
    max_err = std::max(max_err, std::fabs(g - r));
  }
  return max_ref > 0.0 ? max_err / max_ref : max_err;
}

std::size_t count_bit_differences(const float* a, const float* b, std::size_t count) {
  std::size_t diff = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t ua, ub;
    std::memcpy(&ua, &a[i], sizeof ua);
    std::memcpy(&ub, &b[i], sizeof ub);
    diff += ua != ub;
  }
  return diff;
}

void jacobi_initial_grid(std::vector<float>& grid, int n) {
  const std::size_t w = static_cast<std::size_t>(std::max(n, 0));
  grid.assign(w * w, 0.0f);
  for (std::size_t y = 0; y < w; ++y) {
    for (std::size_t x = 0; x < w; ++x) {
      float v;
      if (y == 0)
        v = 1.0f;
      else if (x == 0 || x == w - 1 || y == w - 1)
        v = 0.0f;
      else
        v = static_cast<float>((x * 7 + y * 13) % 17) / 34.0f;
      grid[y * w + x] = v;
    }
  }
}

void matpow_input(std::vector<float>& A, int n) {
  const std::size_t w = static_cast<std::size_t>(std::max(n, 0));
  A.resize(w * w);
  const float scale = w ? static_cast<float>(std::sqrt(3.0 / static_cast<double>(w))) : 0.0f;
  for (std::size_t i = 0; i < w * w; ++i) {
    const std::uint32_t h = mix32(static_cast<std::uint32_t>(i) * 0x9E3779B1U + 0x2545F491U);
    // 24 random bits -> [-1, 1), exactly representable, then one rounding by the scale.
    const float u = static_cast<float>(static_cast<std::int32_t>(h >> 8) - (1 << 23)) * (1.0f / 8388608.0f);
    A[i] = u * scale;
  }
}

}  // namespace hetflow::workloads
