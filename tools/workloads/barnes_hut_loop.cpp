#include "workloads/barnes_hut_loop.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

namespace hetflow::workloads {
namespace {

const BarnesHutLoop::Params& validated(const BarnesHutLoop::Params& p) {
  if (p.n == 0 || p.n >= (std::size_t(1) << 31) - 2 || !(p.theta > 0.0f) || !(p.eps > 0.0f) || !(p.dt > 0.0f) ||
      !(p.tree_slack >= 1.0))
    throw UsageError(
        "barnes-hut: n must be in [1, 2^31 - 2), theta, eps and dt positive and tree_slack >= 1 (got n = " +
        std::to_string(p.n) + ")");
  return p;
}

// A sequential generator (splitmix64): the Plummer sphere's rejection loops need a stream.
class Random {
 public:
  explicit Random(std::uint64_t seed) : s_(seed) {}
  double next() {  // [0, 1)
    std::uint64_t x = (s_ += 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return double((x ^ (x >> 31)) >> 11) * 0x1p-53;
  }

 private:
  std::uint64_t s_;
};

// Lonestar's Plummer model generator (after Aarseth, Henon and Wielen 1974), in double.
void plummer(std::size_t n, std::uint32_t seed, Vec4* pos, std::vector<Vec4>& vel) {
  Random rnd(seed);
  const double rsc = 3 * std::numbers::pi / 16, vsc = std::sqrt(1.0 / rsc);
  auto direction = [&](double& x, double& y, double& z) {
    double sq;
    do {
      x = rnd.next() * 2 - 1, y = rnd.next() * 2 - 1, z = rnd.next() * 2 - 1;
      sq = x * x + y * y + z * z;
    } while (sq > 1.0 || sq == 0.0);
    return std::sqrt(sq);
  };
  vel.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    // 0.999 cuts the radius off at ~39 scale lengths; a uniform of 0 puts the body at the centre.
    const double u = rnd.next() * 0.999;
    const double r = u > 0 ? 1.0 / std::sqrt(std::pow(u, -2.0 / 3.0) - 1) : 0.0;
    double x, y, z;
    double len = direction(x, y, z);
    double s = rsc * r / len;
    pos[i] = {float(x * s), float(y * s), float(z * s), float(1.0 / double(n))};
    double a, b;
    do {
      a = rnd.next(), b = rnd.next() * 0.1;
    } while (b > a * a * std::pow(1 - a * a, 3.5));
    const double v = a * std::sqrt(2.0 / std::sqrt(1 + r * r));
    len = direction(x, y, z);
    s = vsc * v / len;
    vel[i] = {float(x * s), float(y * s), float(z * s), 0.0f};
  }
}

// kernels_cl/barnes_hut.cl built exact, operation for operation (the target builds with
// -ffp-contract=off).
Vec4 walk(const Vec4* pos, const Vec4* mass, const float* open2, const Int2* links, std::size_t i, float eps2) {
  const Vec4 p = pos[i];
  const std::int32_t self = -std::int32_t(i) - 1;
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  std::int32_t k = 0;
  while (k >= 0) {
    const Vec4 q = mass[k];
    const Int2 l = links[k];
    const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
    const float d2 = (dx * dx + dy * dy) + dz * dz;
    if (l.x >= 0 && d2 < open2[k]) {
      k = l.x;
      continue;
    }
    if (l.x != self) {
      const float inv = 1.0f / std::sqrt(d2 + eps2);
      const float s = q.w * ((inv * inv) * inv);
      ax = ax + dx * s;
      ay = ay + dy * s;
      az = az + dz * s;
    }
    k = l.y;
  }
  return {ax, ay, az, 0.0f};
}

// Body k becomes body order[k].
void renumber(const std::vector<std::uint32_t>& order, Vec4* pos, std::vector<Vec4>& vel) {
  const std::vector<Vec4> old_pos(pos, pos + vel.size()), old_vel = vel;
  for (std::size_t k = 0; k < vel.size(); ++k) {
    pos[k] = old_pos[order[k]];
    vel[k] = old_vel[order[k]];
  }
}

template <class T>
void copy_into(const std::vector<T>& v, const Tile<T>& t) {
  std::copy(v.begin(), v.end(), t.data());
}

}  // namespace

BarnesHutLoop::BarnesHutLoop(Controller& c, const Params& p)
    : p_(validated(p)),
      eps2_(p.eps * p.eps),
      pos_mass_(c.tile<Vec4>(p.n, "bh_pos_mass")),
      acc_(c.tile<Vec4>(p.n, "bh_acc")),
      kernel_(c.kernel("barnes_hut.cl", "bh_force", build_options(p.fast_math))) {
  plummer(p_.n, p_.seed, pos_mass_.data(), vel_);
  const ThreadedTree first = build_threaded_tree(pos_mass_.data(), p_.n, p_.theta);
  // Bodies renumbered in tree order: inserting them so makes every build after this one run
  // along cached paths (4M bodies: 7.4 s in the generator's random order, 1.1 s renumbered).
  renumber(first.order, pos_mass_.data(), vel_);
  const std::size_t capacity = std::size_t(std::ceil(double(first.nodes()) * p_.tree_slack)) + 64;
  tree_mass_ = c.tile<Vec4>(capacity, "bh_tree_mass");
  tree_open2_ = c.tile<float>(capacity, "bh_tree_open2");
  tree_links_ = c.tile<Int2>(capacity, "bh_tree_links");
  // The part past the tree is moved with it but never walked; zeros keep the transfer defined.
  std::fill(tree_mass_.data(), tree_mass_.data() + capacity, Vec4{});
  std::fill(tree_open2_.data(), tree_open2_.data() + capacity, 0.0f);
  std::fill(tree_links_.data(), tree_links_.data() + capacity, Int2{-1, -1});
}

std::vector<Access> BarnesHutLoop::reads() const {
  return {in(pos_mass_), in(tree_mass_), in(tree_open2_), in(tree_links_)};
}

void BarnesHutLoop::before_step() {
  Vec4* pos = pos_mass_.data();
  ThreadedTree t = build_threaded_tree(pos, p_.n, p_.theta);
  if (t.nodes() > tree_capacity())
    throw Error("barnes-hut: the tree has " + std::to_string(t.nodes()) + " nodes, the tiles hold " +
                std::to_string(tree_capacity()) + " (raise Params::tree_slack)");
  renumber(t.order, pos, vel_);
  copy_into(t.mass, tree_mass_);
  copy_into(t.open2, tree_open2_);
  copy_into(t.links, tree_links_);
  nodes_ = t.nodes();
}

void BarnesHutLoop::after_step() {
  Vec4* pos = pos_mass_.data();
  const Vec4* acc = acc_.data();
  const float dt = p_.dt;
  for (std::size_t i = 0; i < p_.n; ++i) {
    Vec4& v = vel_[i];
    v.x += acc[i].x * dt, v.y += acc[i].y * dt, v.z += acc[i].z * dt;
    pos[i].x += v.x * dt, pos[i].y += v.y * dt, pos[i].z += v.z * dt;
  }
}

void BarnesHutLoop::cpu(std::size_t begin, std::size_t end) {
  check_chunk("barnes-hut", begin, end, size());
  if (nodes_ == 0) throw UsageError("barnes-hut: cpu() before the first before_step() (no tree yet)");
  forces(arrays(), begin, end, acc_.data() + begin);
}

BarnesHutLoop::Arrays BarnesHutLoop::arrays() const {
  if (nodes_ == 0) throw UsageError("barnes-hut: arrays() before the first before_step() (no tree yet)");
  return {pos_mass_.data(), tree_mass_.data(), tree_open2_.data(), tree_links_.data(), p_.n, tree_capacity(), eps2_};
}

void BarnesHutLoop::forces(const Arrays& a, std::size_t begin, std::size_t end, Vec4* acc) {
  for (std::size_t i = begin; i < end; ++i)
    acc[i - begin] = walk(a.pos_mass, a.tree_mass, a.tree_open2, a.tree_links, i, a.eps2);
}

const char* BarnesHutLoop::build_options(bool fast_math) {
  return fast_math ? "-cl-fast-relaxed-math -DHETFLOW_FAST_MATH" : "-cl-fp32-correctly-rounded-divide-sqrt";
}

void BarnesHutLoop::device(Controller& c, std::size_t begin, std::size_t end) {
  check_chunk("barnes-hut", begin, end, size());
  if (nodes_ == 0) throw UsageError("barnes-hut: device() before the first before_step() (no tree yet)");
  c.launch(kernel_, Range(round_up_to(end - begin, kLoopLocal)).offset(begin).local(kLoopLocal), in(pos_mass_),
           in(tree_mass_), in(tree_open2_), in(tree_links_), out(span_of(acc_, begin, end)), int(end), eps2_);
}

void BarnesHutLoop::upload(Controller& c) {
  c.move_to(pos_mass_);
  c.move_to(tree_mass_);
  c.move_to(tree_open2_);
  c.move_to(tree_links_);
}

void BarnesHutLoop::clear_output() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(acc_.data(), acc_.data() + p_.n, Vec4{nan, nan, nan, nan});
}

std::vector<float> BarnesHutLoop::reference() const {
  if (nodes_ == 0) throw UsageError("barnes-hut: reference() before the first before_step() (no tree yet)");
  std::vector<float> ref(4 * p_.n);
  for (std::size_t i = 0; i < p_.n; ++i) {
    const Vec4 a = walk(pos_mass_.data(), tree_mass_.data(), tree_open2_.data(), tree_links_.data(), i, eps2_);
    ref[4 * i] = a.x, ref[4 * i + 1] = a.y, ref[4 * i + 2] = a.z, ref[4 * i + 3] = a.w;
  }
  return ref;
}

std::vector<float> BarnesHutLoop::direct_sum() const {
  const Vec4* pos = pos_mass_.data();
  std::vector<float> ref(4 * p_.n);
  for (std::size_t i = 0; i < p_.n; ++i) {
    double a[3] = {0, 0, 0};
    for (std::size_t j = 0; j < p_.n; ++j) {
      if (j == i) continue;
      const double d[3] = {double(pos[j].x) - pos[i].x, double(pos[j].y) - pos[i].y, double(pos[j].z) - pos[i].z};
      const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + double(eps2_);
      const double s = double(pos[j].w) / (r2 * std::sqrt(r2));
      for (int k = 0; k < 3; ++k) a[k] += d[k] * s;
    }
    ref[4 * i] = float(a[0]), ref[4 * i + 1] = float(a[1]), ref[4 * i + 2] = float(a[2]), ref[4 * i + 3] = 0.0f;
  }
  return ref;
}

LoopCheck BarnesHutLoop::check(const std::vector<float>& ref) const { return check(acc_.data(), ref); }

LoopCheck BarnesHutLoop::check(const Vec4* acc, const std::vector<float>& ref) const {
  if (ref.size() != 4 * p_.n) throw UsageError("barnes-hut: the reference has the wrong size");
  return compare_floats(&acc->x, ref.data(), ref.size(), p_.fast_math ? kTreeTolerance : kExactTolerance, rms(ref));
}

}  // namespace hetflow::workloads
