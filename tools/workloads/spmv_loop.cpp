#include "workloads/spmv_loop.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "workloads/hash.hpp"

namespace hetflow::workloads {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Matrix and vector entries: multiples of 1/1024 in [-1, 1) (any float would do; these print well).
float entry(std::uint32_t seed, std::uint64_t key) {
  return float(std::int32_t(splitmix64(key ^ (std::uint64_t(seed) << 40)) % 2048) - 1024) / 1024.0f;
}

// kernels_cl/spmv.cl, operation for operation (the target builds with -ffp-contract=off): lane l's
// partial sum of nonzeros l, l + kLanes, ... in column order, then the lanes added pairwise.
constexpr int kLanes = 32;  // SPMV_LANES there
static_assert(kLoopLocal == 2 * kLanes, "kernels_cl/spmv.cl's SPMV_GROUP: two rows per work-group");

float row_dot(const std::int32_t* row_ptr, const std::int32_t* cols, const float* vals, const float* x, std::size_t i) {
  const std::int32_t begin = row_ptr[i], end = row_ptr[i + 1];
  int active = int(std::min<std::int32_t>(kLanes, end - begin));  // lanes given a product
  if (active <= 0) return 0.0f;
  float lane[kLanes];
  std::fill_n(lane, active, 0.0f);
  for (std::int32_t base = begin; base < end; base += kLanes) {
    const std::int32_t count = std::min<std::int32_t>(kLanes, end - base);
    for (std::int32_t l = 0; l < count; ++l) lane[l] = lane[l] + vals[base + l] * x[cols[base + l]];
  }
  // The other lanes hold +0.0 there, which adds nothing: no partial sum is -0.0 (0 + -0 and x + -x
  // round to +0), so they are skipped — most rows are shorter than kLanes.
  for (int step = kLanes / 2; step > 0; step /= 2) {
    for (int l = 0; l < step && l + step < active; ++l) lane[l] = lane[l] + lane[l + step];
    active = std::min(active, step);
  }
  return lane[0];
}

}  // namespace

Csr make_rmat(const RmatParams& p) {
  if (p.scale < 1 || p.scale > 30 || p.edge_factor == 0 || !(p.a > 0 && p.b >= 0 && p.c >= 0 && p.a + p.b + p.c < 1))
    throw UsageError("rmat: scale must be in [1, 30], edge_factor > 0, a > 0, b, c >= 0 and a + b + c < 1");
  const std::size_t n = std::size_t(1) << p.scale;
  const std::size_t edges = n * p.edge_factor;
  if (edges > std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw UsageError("rmat: 2^scale * edge_factor = " + std::to_string(edges) +
                     " edges exceed the int32 indices of the CSR kernel");
  // Quadrant thresholds on a 32-bit uniform: top-left, top-right, bottom-left, else bottom-right.
  const double scale32 = 4294967296.0;
  const std::uint64_t ta = std::uint64_t(p.a * scale32), tb = std::uint64_t((p.a + p.b) * scale32),
                      tc = std::uint64_t((p.a + p.b + p.c) * scale32);
  std::vector<std::uint64_t> coo(edges);  // row << 32 | col
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, edges, 1 << 14), [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t e = r.begin(); e < r.end(); ++e) {
      std::uint64_t row = 0, col = 0, bits = 0;
      for (unsigned level = 0; level < p.scale; ++level) {
        if (level % 2 == 0) bits = splitmix64((std::uint64_t(p.seed) << 40) ^ (e * 16 + level / 2));
        const std::uint64_t u = level % 2 == 0 ? bits & 0xffffffffULL : bits >> 32;
        const std::uint64_t down = u >= tb, right = (u >= ta && u < tb) || u >= tc;
        row = row << 1 | down;
        col = col << 1 | right;
      }
      coo[e] = row << 32 | col;
    }
  });
  tbb::parallel_sort(coo.begin(), coo.end());
  coo.erase(std::unique(coo.begin(), coo.end()), coo.end());

  Csr m;
  m.rows = n;
  m.row_ptr.assign(n + 1, 0);
  m.cols.resize(coo.size());
  m.vals.resize(coo.size());
  for (std::size_t k = 0; k < coo.size(); ++k) {
    const std::size_t row = coo[k] >> 32;
    m.row_ptr[row + 1]++;
    m.cols[k] = std::int32_t(coo[k] & 0xffffffffULL);
    m.vals[k] = entry(p.seed, coo[k]);
  }
  for (std::size_t i = 0; i < n; ++i) m.row_ptr[i + 1] += m.row_ptr[i];
  return m;
}

SpmvLoop::SpmvLoop(Controller& c, const Params& p) {
  Csr m = make_rmat(p);
  rows_ = m.rows;
  nnz_ = m.cols.size();
  row_ptr_ = c.tile<std::int32_t>(rows_ + 1, "spmv_row_ptr");
  // A matrix with no nonzeros still gets a one-element tile: tiles cannot be empty.
  cols_ = c.tile<std::int32_t>(std::max<std::size_t>(nnz_, 1), "spmv_cols");
  vals_ = c.tile<float>(std::max<std::size_t>(nnz_, 1), "spmv_vals");
  x_ = c.tile<float>(rows_, "spmv_x");
  y_ = c.tile<float>(rows_, "spmv_y");
  kernel_ = c.kernel("spmv.cl", "spmv_csr");
  serial_kernel_ = c.kernel("spmv.cl", "spmv_csr_serial");
  std::copy(m.row_ptr.begin(), m.row_ptr.end(), row_ptr_.data());
  std::copy(m.cols.begin(), m.cols.end(), cols_.data());
  std::copy(m.vals.begin(), m.vals.end(), vals_.data());
  for (std::size_t j = 0; j < rows_; ++j) x_[j] = entry(p.seed + 1, j);
}

void SpmvLoop::cpu(std::size_t begin, std::size_t end) {
  check_chunk("spmv", begin, end, size());
  const std::int32_t *row_ptr = row_ptr_.data(), *cols = cols_.data();
  const float *vals = vals_.data(), *x = x_.data();
  float* y = y_.data();
  for (std::size_t i = begin; i < end; ++i) y[i] = row_dot(row_ptr, cols, vals, x, i);
}

void SpmvLoop::device(Controller& c, std::size_t begin, std::size_t end) {
  check_chunk("spmv", begin, end, size());
  // A CPU device runs a row per work-item: a work-group's barriers cost it more than 32 lanes gain
  // (5x slower on PoCL 3.1 here).
  const bool serial = device_kernel_ == DeviceKernel::serial ||
                      (device_kernel_ == DeviceKernel::by_device && (c.device().type & CL_DEVICE_TYPE_CPU) != 0);
  const std::size_t lanes = serial ? 1 : kLanes;
  c.launch(serial ? serial_kernel_ : kernel_,
           Range(round_up_to((end - begin) * lanes, kLoopLocal)).offset(begin * lanes).local(kLoopLocal), in(row_ptr_),
           in(cols_), in(vals_), in(x_), out(span_of(y_, begin, end)), int(end));
}

void SpmvLoop::upload(Controller& c) {
  c.move_to(row_ptr_);
  c.move_to(cols_);
  c.move_to(vals_);
  c.move_to(x_);
}

void SpmvLoop::clear_output() { std::fill(y_.data(), y_.data() + rows_, std::numeric_limits<float>::quiet_NaN()); }

std::vector<float> SpmvLoop::reference() const {
  std::vector<float> ref(rows_);
  for (std::size_t i = 0; i < rows_; ++i) ref[i] = row_dot(row_ptr_.data(), cols_.data(), vals_.data(), x_.data(), i);
  return ref;
}

LoopCheck SpmvLoop::check(const std::vector<float>& ref) const {
  if (ref.size() != rows_) throw UsageError("spmv: the reference has the wrong size");
  return compare_floats(y_.data(), ref.data(), rows_, 0.0, 1.0);
}

}  // namespace hetflow::workloads
