// The octree of the Barnes-Hut workload (tools/workloads/barnes_hut_loop.hpp), built on the host each
// step and stored "threaded" as in the seeds' code (TheUnixRoot/Logfit): nodes in depth-first order,
// each with a link to its first child and one to the node that follows its subtree, so a walk needs
// no stack: open a cell → go to its first child; use it (far cell or body) → go to its next.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "workloads/loop_common.hpp"

namespace hetflow::workloads {

struct ThreadedTree {
  std::vector<Vec4> mass;    // per node: centre of mass (x, y, z) and mass (w); a leaf: its body
  std::vector<float> open2;  // per cell: (side / theta)^2; a body nearer its centre of mass opens it
  // Per node: x = first child (cells, >= 0) or -(body + 1) (leaves); y = the node after this
  // subtree in depth-first order, -1 after the last.
  std::vector<Int2> links;
  // order[k]: the body held by the k-th leaf in depth-first order. Bodies renumbered in this order
  // (leaf k holds body k, as the links say) walk similar paths when their indices are near, which
  // is what a GPU warp needs.
  std::vector<std::uint32_t> order;
  std::size_t nodes() const { return links.size(); }
};

// The tree over `n` bodies (x, y, z, mass) with the leaves' bodies numbered in depth-first order
// (links and mass hold them renumbered: leaf k is body order[k]). The root is always a cell. Bodies
// closer than 2^-40 of the box's side share a cell instead of being split further.
ThreadedTree build_threaded_tree(const Vec4* bodies, std::size_t n, float theta);

}  // namespace hetflow::workloads
