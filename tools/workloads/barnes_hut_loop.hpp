// The Barnes-Hut force loop, the seeds' heterogeneous loop workload (002; TheUnixRoot/Logfit;
// issue 15; research next-features A6 #1): iteration i walks the octree for body i's acceleration.
// Irregular (the walk's length depends on where the body is), latency-bound. Per time step:
// before_step() builds the tree on the host and renumbers the bodies in its depth-first order,
// the loop computes the accelerations, after_step() advances velocities and positions on the host.
// Data structure-of-arrays: positions+masses and the tree are read by every chunk, a chunk writes
// only its bodies' accelerations (velocities stay on the host).
#pragma once
#include <hetflow/controller.hpp>

#include <cstdint>
#include <vector>

#include "workloads/barnes_hut_tree.hpp"
#include "workloads/loop_common.hpp"

namespace hetflow::workloads {

class BarnesHutLoop {
 public:
  struct Params {
    std::size_t n = 4096;
    float theta = 0.5f, eps = 0.05f, dt = 0.025f;  // Lonestar's defaults
    std::uint32_t seed = 1;
    // The tree tiles hold this many times the first step's nodes; a later tree larger than that
    // throws from before_step() (Plummer spheres change their tree little over tens of steps).
    double tree_slack = 1.5;
    bool fast_math = false;  // as NBodyLoop::Params::fast_math
  };
  // Relative to the RMS acceleration, an exact build against the same walk on the host (in case
  // a device fuses despite the pragma; on PoCL it is bit-identical).
  static constexpr double kExactTolerance = 1e-4;
  // Relative to the RMS acceleration, the tree's own error against the all-pairs sum with theta
  // 0.5 and monopoles only (measured on the 1500-body sphere: max 3.6e-2 over 2 steps, 12 of 6000
  // components above 2e-2).
  // A fast-math build is checked against it too: a fused d2 can flip the opening test of a cell
  // at its boundary, which moves that body's force by up to the tree's error.
  static constexpr double kTreeTolerance = 5e-2;

  // A Plummer sphere (Aarseth, Henon and Wielen 1974, as Lonestar generates it) of n bodies of
  // mass 1/n; the tiles are sized by its tree.
  BarnesHutLoop(Controller& c, const Params& p);
  std::size_t size() const { return p_.n; }
  std::vector<Access> reads() const;
  std::vector<Access> writes(std::size_t begin, std::size_t end) const { return {out(span_of(acc_, begin, end))}; }
  void cpu(std::size_t begin, std::size_t end);
  void device(Controller& c, std::size_t begin, std::size_t end);
  // Host work between loop calls, on the host images: call them only when no request uses the
  // tiles (after the loop's wait). before_step writes the tree and renumbers the positions (the
  // device needs both moved again); after_step reads the accelerations and writes the positions.
  void before_step();
  void after_step();
  // What they touch, to run them as host tasks ordered after the loop's chunks and before the
  // next call's transfers (after_step reads every chunk's accelerations: the device's fetched).
  std::vector<Access> before_step_accesses() const {
    return {io(pos_mass_), out(tree_mass_), out(tree_open2_), out(tree_links_)};
  }
  std::vector<Access> after_step_accesses() const { return {in(acc_), io(pos_mass_)}; }

  void upload(Controller& c);  // moves reads() to the device
  void fetch(Controller& c, std::size_t begin, std::size_t end) { c.move_from(span_of(acc_, begin, end)); }
  void clear_output();  // NaN, which no iteration writes
  const Tile<Vec4>& output() const { return acc_; }
  std::size_t tree_nodes() const { return nodes_; }
  std::size_t tree_capacity() const { return tree_mass_.size(); }
  // (ax, ay, az, 0) per body, the same walk by a plain sequential loop (needs before_step()).
  std::vector<float> reference() const;
  // The all-pairs sum in double, rounded to float: what the tree approximates. O(n^2).
  std::vector<float> direct_sum() const;
  // Within kExactTolerance (exact build) or kTreeTolerance (fast math); `differing` says how exact.
  LoopCheck check(const std::vector<float>& ref) const;

  // For other runtimes running the same loop on this state (perf/peers/): what a chunk reads, the
  // CPU body, the kernel's build options (bh_force of barnes_hut.cl), and the check of their output.
  struct Arrays {
    const Vec4* pos_mass = nullptr;   // n bodies
    const Vec4* tree_mass = nullptr;  // tree_capacity nodes each
    const float* tree_open2 = nullptr;
    const Int2* tree_links = nullptr;
    std::size_t n = 0, tree_capacity = 0;
    float eps2 = 0;
  };
  Arrays arrays() const;  // the host images; needs before_step()
  const Params& params() const { return p_; }
  // Bodies [begin, end) of `a` into acc[0, end - begin): what cpu() runs.
  static void forces(const Arrays& a, std::size_t begin, std::size_t end, Vec4* acc);
  static const char* build_options(bool fast_math);
  LoopCheck check(const Vec4* acc, const std::vector<float>& ref) const;  // acc: n bodies

 private:
  Params p_;
  float eps2_;
  std::vector<Vec4> vel_;
  std::size_t nodes_ = 0;
  Tile<Vec4> pos_mass_, acc_, tree_mass_;
  Tile<float> tree_open2_;
  Tile<Int2> tree_links_;
  Kernel kernel_;
};

}  // namespace hetflow::workloads
