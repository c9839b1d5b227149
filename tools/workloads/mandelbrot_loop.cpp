#include "workloads/mandelbrot_loop.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace hetflow::workloads {
namespace {

// kernels_cl/mandelbrot.cl, operation for operation (the target builds with -ffp-contract=off).
std::int32_t escape_count(float cr, float ci, int max_iter) {
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
  return it;
}

const MandelbrotLoop::Params& validated(const MandelbrotLoop::Params& p) {
  // Pixel indices become floats exactly below 2^24; the kernel indexes with int.
  constexpr std::size_t limit = std::size_t(1) << 24;
  if (p.width == 0 || p.height == 0 || p.width >= limit || p.height >= limit || p.max_iter <= 0 ||
      p.width * p.height > std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw UsageError("mandelbrot: width and height must be in [1, 2^24), width*height < 2^31 and max_iter > 0 (got " +
                     std::to_string(p.width) + "x" + std::to_string(p.height) + ", max_iter " +
                     std::to_string(p.max_iter) + ")");
  return p;
}

}  // namespace

MandelbrotLoop::MandelbrotLoop(Controller& c, const Params& p)
    : p_(validated(p)),
      dx_((p.x1 - p.x0) / float(p.width)),
      dy_((p.y1 - p.y0) / float(p.height)),
      counts_(c.tile<std::int32_t>(Extent{p.width, p.height}, "mandelbrot_counts")),
      kernel_(c.kernel("mandelbrot.cl", "mandelbrot_rows")) {}

std::vector<Access> MandelbrotLoop::writes(std::size_t begin, std::size_t end) const {
  return {out(counts_.rows(begin, end - begin))};
}

void MandelbrotLoop::cpu(std::size_t begin, std::size_t end) {
  check_chunk("mandelbrot", begin, end, size());
  std::int32_t* counts = counts_.data();
  for (std::size_t y = begin; y < end; ++y) {
    const float ci = p_.y0 + float(y) * dy_;
    for (std::size_t x = 0; x < p_.width; ++x)
      counts[y * p_.width + x] = escape_count(p_.x0 + float(x) * dx_, ci, p_.max_iter);
  }
}

void MandelbrotLoop::device(Controller& c, std::size_t begin, std::size_t end) {
  check_chunk("mandelbrot", begin, end, size());
  c.launch(kernel_, Range(round_up_to(p_.width, kLoopLocal), end - begin).offset(0, begin).local(kLoopLocal, 1),
           out(counts_.rows(begin, end - begin)), int(p_.width), p_.x0, p_.y0, dx_, dy_, p_.max_iter);
}

void MandelbrotLoop::fetch(Controller& c, std::size_t begin, std::size_t end) {
  c.move_from(counts_.rows(begin, end - begin));
}

void MandelbrotLoop::clear_output() { std::fill(counts_.data(), counts_.data() + counts_.size(), -1); }

std::vector<std::int32_t> MandelbrotLoop::reference() const {
  std::vector<std::int32_t> ref(p_.width * p_.height);
  for (std::size_t y = 0; y < p_.height; ++y)
    for (std::size_t x = 0; x < p_.width; ++x)
      ref[y * p_.width + x] = escape_count(p_.x0 + float(x) * dx_, p_.y0 + float(y) * dy_, p_.max_iter);
  return ref;
}

LoopCheck MandelbrotLoop::check(const std::vector<std::int32_t>& ref) const {
  if (ref.size() != counts_.size()) throw UsageError("mandelbrot: the reference has the wrong size");
  return compare_ints(counts_.data(), ref.data(), ref.size());
}

}  // namespace hetflow::workloads
