#include "workloads/barnes_hut_tree.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include <hetflow/errors.hpp>

namespace hetflow::workloads {
namespace {

constexpr int kMaxDepth = 40;
constexpr std::int32_t kEmpty = -1;
// A child slot holds kEmpty, a cell index (>= 0) or a body b as body_slot(b) (<= -2).
constexpr std::int32_t body_slot(std::uint32_t b) { return -std::int32_t(b) - 2; }
constexpr std::uint32_t slot_body(std::int32_t s) { return std::uint32_t(-s - 2); }

struct Cell {
  double cx, cy, cz, half;
  std::array<std::int32_t, 8> child;
  std::vector<std::uint32_t> bucket;  // bodies that reached kMaxDepth together
  std::size_t subtree = 0;            // nodes in this subtree, this cell included
  double m = 0, mx = 0, my = 0, mz = 0;
};

class Builder {
 public:
  Builder(const Vec4* b, std::size_t n, float theta) : bodies_(b), n_(n), theta_(theta) {}

  ThreadedTree build() {
    make_root();
    for (std::uint32_t b = 0; b < n_; ++b) insert(b);
    summarise(0);
    ThreadedTree t;
    t.mass.resize(cells_[0].subtree);
    t.open2.resize(t.mass.size());
    t.links.resize(t.mass.size());
    t.order.reserve(n_);
    emit(t, 0, 0, -1);
    return t;
  }

 private:
  void make_root() {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (std::size_t i = 0; i < n_; ++i) {
      const double p[3] = {bodies_[i].x, bodies_[i].y, bodies_[i].z};
      for (int d = 0; d < 3; ++d) {
        if (!std::isfinite(p[d])) throw Error("barnes-hut: body " + std::to_string(i) + " has a non-finite position");
        lo[d] = std::min(lo[d], p[d]);
        hi[d] = std::max(hi[d], p[d]);
      }
    }
    // Slightly larger than the bounding box, so no body sits on the root's upper faces.
    const double half = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-30}) * 0.5 * (1 + 1e-6);
    new_cell((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2, half);
  }

  std::int32_t new_cell(double cx, double cy, double cz, double half) {
    Cell c{cx, cy, cz, half, {}, {}, 0, 0, 0, 0, 0};
    c.child.fill(kEmpty);
    cells_.push_back(std::move(c));
    return std::int32_t(cells_.size() - 1);
  }

  int octant(const Cell& c, std::uint32_t b) const {
    const Vec4& p = bodies_[b];
    return (p.x >= c.cx ? 1 : 0) | (p.y >= c.cy ? 2 : 0) | (p.z >= c.cz ? 4 : 0);
  }

  void insert(std::uint32_t b) {
    std::int32_t cell = 0;
    for (int depth = 0;; ++depth) {
      const int o = octant(cells_[cell], b);
      const std::int32_t slot = cells_[cell].child[o];
      if (slot == kEmpty) {
        cells_[cell].child[o] = body_slot(b);
        return;
      }
      if (slot >= 0) {
        cell = slot;
        continue;
      }
      if (depth + 1 >= kMaxDepth) {  // coincident bodies: keep both here
        cells_[cell].bucket.push_back(b);
        return;
      }
      // Split: the resident body moves one level down, then b goes on from there.
      const Cell& c = cells_[cell];
      const double q = c.half / 2;
      const std::int32_t sub = new_cell(c.cx + (o & 1 ? q : -q), c.cy + (o & 2 ? q : -q), c.cz + (o & 4 ? q : -q), q);
      const std::uint32_t resident = slot_body(slot);
      cells_[sub].child[octant(cells_[sub], resident)] = body_slot(resident);
      cells_[cell].child[o] = sub;
      cell = sub;
    }
  }

  void add_body(Cell& c, std::uint32_t b) {
    const Vec4& p = bodies_[b];
    c.m += p.w;
    c.mx += double(p.w) * p.x;
    c.my += double(p.w) * p.y;
    c.mz += double(p.w) * p.z;
    c.subtree += 1;
  }

  // Masses, centres of mass and subtree sizes, children before parents (depth <= kMaxDepth).
  void summarise(std::int32_t ci) {
    Cell& c = cells_[ci];
    c.subtree = 1;
    for (std::int32_t s : c.child) {
      if (s == kEmpty) continue;
      if (s <= -2) {
        add_body(cells_[ci], slot_body(s));
        continue;
      }
      summarise(s);
      Cell &parent = cells_[ci], &sub = cells_[s];
      parent.m += sub.m;
      parent.mx += sub.mx;
      parent.my += sub.my;
      parent.mz += sub.mz;
      parent.subtree += sub.subtree;
    }
    for (std::uint32_t b : cells_[ci].bucket) add_body(cells_[ci], b);
  }

  // Writes cell `ci` at node `at` and its subtree after it; `next` is the node after the subtree.
  void emit(ThreadedTree& t, std::int32_t ci, std::size_t at, std::int32_t next) {
    const Cell& c = cells_[ci];
    const double m = c.m > 0 ? c.m : 1;  // a massless cell: any point will do, its forces are 0
    t.mass[at] = {float(c.mx / m), float(c.my / m), float(c.mz / m), float(c.m)};
    const double open = 2 * c.half / theta_;
    t.open2[at] = float(open * open);
    std::vector<std::int32_t> kids;
    for (std::int32_t s : c.child)
      if (s != kEmpty) kids.push_back(s);
    for (std::uint32_t b : c.bucket) kids.push_back(body_slot(b));
    t.links[at] = {std::int32_t(at + 1), next};  // every cell holds a body: n >= 1, and cells are made to split
    std::size_t node = at + 1;
    for (std::size_t k = 0; k < kids.size(); ++k) {
      const std::size_t size = kids[k] >= 0 ? cells_[kids[k]].subtree : 1;
      const std::int32_t after = k + 1 < kids.size() ? std::int32_t(node + size) : next;
      if (kids[k] >= 0) {
        emit(t, kids[k], node, after);
      } else {
        const std::uint32_t b = slot_body(kids[k]);
        const std::uint32_t renamed = std::uint32_t(t.order.size());
        t.order.push_back(b);
        t.mass[node] = bodies_[b];
        t.open2[node] = 0;
        t.links[node] = {-std::int32_t(renamed) - 1, after};
      }
      node += size;
    }
  }

  const Vec4* bodies_;
  std::size_t n_;
  double theta_;
  std::vector<Cell> cells_;
};

}  // namespace

ThreadedTree build_threaded_tree(const Vec4* bodies, std::size_t n, float theta) {
  if (n == 0 || n >= (std::size_t(1) << 31) - 2 || !(theta > 0))
    throw UsageError("barnes-hut: the tree needs 1 <= n < 2^31 - 2 bodies and theta > 0");
  return Builder(bodies, n, theta).build();
}

}  // namespace hetflow::workloads
