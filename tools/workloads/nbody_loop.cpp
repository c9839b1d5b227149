#include "workloads/nbody_loop.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "workloads/hash.hpp"

namespace hetflow::workloads {
namespace {

constexpr std::size_t kMaxLanes = kLoopLocal;

const NBodyLoop::Params& validated(const NBodyLoop::Params& p) {
  if (p.n == 0 || p.n > std::size_t(std::numeric_limits<std::int32_t>::max()) || !(p.eps > 0.0f) || p.lanes == 0 ||
      p.lanes > kMaxLanes || (p.lanes & (p.lanes - 1)) != 0)
    throw UsageError("nbody: n must be in [1, 2^31), eps > 0 and lanes a power of two in [1, " +
                     std::to_string(kMaxLanes) + "] (got n = " + std::to_string(p.n) +
                     ", eps = " + std::to_string(p.eps) + ", lanes = " + std::to_string(p.lanes) + ")");
  return p;
}

// A float in [lo, hi) from hash stream `seed`, element `i`, component `k`.
float uniform(std::uint32_t seed, std::size_t i, std::uint32_t k, float lo, float hi) {
  const std::uint32_t h =
      mix32(mix32(seed * 0x9e3779b9U + k) ^ std::uint32_t(i) ^ std::uint32_t(i >> 32) * 0x85ebca6bU);
  return lo + (hi - lo) * float(h >> 8) * 0x1p-24f;
}

// kernels_cl/nbody.cl built exact, operation for operation (the target builds with
// -ffp-contract=off): lane l's sum over j = l, l + lanes, ... kept apart, then the lanes in order.
Vec4 accel(const Vec4* pm, std::size_t n, std::size_t i, float eps2, std::size_t lanes) {
  const Vec4 p = pm[i];
  std::array<Vec4, kMaxLanes> part{};
  for (std::size_t j = 0; j < n; ++j) {
    const Vec4 q = pm[j];
    const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
    const float inv = 1.0f / std::sqrt(((dx * dx + dy * dy) + dz * dz) + eps2);
    const float s = q.w * ((inv * inv) * inv);
    Vec4& a = part[j & (lanes - 1)];  // lanes is a power of two
    a.x = a.x + dx * s;
    a.y = a.y + dy * s;
    a.z = a.z + dz * s;
  }
  float sx = 0.0f, sy = 0.0f, sz = 0.0f;
  for (std::size_t l = 0; l < lanes; ++l) {
    sx = sx + part[l].x;
    sy = sy + part[l].y;
    sz = sz + part[l].z;
  }
  return {sx, sy, sz, 0.0f};
}

}  // namespace

NBodyLoop::NBodyLoop(Controller& c, const Params& p)
    : p_(validated(p)),
      eps2_(p.eps * p.eps),
      pos_mass_(c.tile<Vec4>(p.n, "nbody_pos_mass")),
      acc_(c.tile<Vec4>(p.n, "nbody_acc")),
      kernel_(c.kernel(
          "nbody.cl", "nbody_accel",
          p.fast_math ? "-cl-fast-relaxed-math -DHETFLOW_FAST_MATH" : "-cl-fp32-correctly-rounded-divide-sqrt")) {
  // Uniform in the cube [-1, 1)^3, masses in [0.5, 1.5) / n: a total mass near 1.
  Vec4* pm = pos_mass_.data();
  for (std::size_t i = 0; i < p_.n; ++i)
    pm[i] = {uniform(p_.seed, i, 0, -1.0f, 1.0f), uniform(p_.seed, i, 1, -1.0f, 1.0f),
             uniform(p_.seed, i, 2, -1.0f, 1.0f), uniform(p_.seed, i, 3, 0.5f, 1.5f) / float(p_.n)};
}

void NBodyLoop::cpu(std::size_t begin, std::size_t end) {
  check_chunk("nbody", begin, end, size());
  const Vec4* pm = pos_mass_.data();
  Vec4* acc = acc_.data();
  for (std::size_t i = begin; i < end; ++i) acc[i] = accel(pm, p_.n, i, eps2_, p_.lanes);
}

void NBodyLoop::device(Controller& c, std::size_t begin, std::size_t end) {
  check_chunk("nbody", begin, end, size());
  // A work-group of kLoopLocal work-items: `lanes` per body, kLoopLocal / lanes bodies.
  const std::size_t rows = kLoopLocal / p_.lanes;
  c.launch(kernel_, Range(p_.lanes, round_up_to(end - begin, rows)).offset(0, begin).local(p_.lanes, rows),
           in(pos_mass_), out(span_of(acc_, begin, end)), local_mem<Vec4>(kLoopLocal), int(p_.n), int(end), eps2_);
}

void NBodyLoop::clear_output() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(acc_.data(), acc_.data() + acc_.size(), Vec4{nan, nan, nan, nan});
}

std::vector<float> NBodyLoop::reference() const {
  std::vector<float> ref(4 * p_.n);
  const Vec4* pm = pos_mass_.data();
  for (std::size_t i = 0; i < p_.n; ++i) {
    const Vec4 a = accel(pm, p_.n, i, eps2_, p_.lanes);
    ref[4 * i] = a.x, ref[4 * i + 1] = a.y, ref[4 * i + 2] = a.z, ref[4 * i + 3] = a.w;
  }
  return ref;
}

LoopCheck NBodyLoop::check(const std::vector<float>& ref) const {
  if (ref.size() != 4 * p_.n) throw UsageError("nbody: the reference has the wrong size");
  return compare_floats(&acc_.data()->x, ref.data(), ref.size(), kFastTolerance, rms(ref));
}

}  // namespace hetflow::workloads
