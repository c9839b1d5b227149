// N-body all pairs, a heterogeneous loop workload (issue 15; research next-features A6 #3):
// iteration i sums the softened gravitational acceleration of every body on body i. Regular (every
// iteration costs n interactions), compute-bound.
#pragma once
#include <hetflow/controller.hpp>

#include <cstdint>
#include <vector>

#include "workloads/loop_common.hpp"

namespace hetflow::workloads {

class NBodyLoop {
 public:
  struct Params {
    std::size_t n = 4096;
    float eps = 0.05f;  // softening length: the self term adds exactly 0 and close pairs stay finite
    std::uint32_t seed = 1;
    // Exact: contraction off and 1/sqrt correctly rounded, so on a conformant device the kernel
    // repeats the host's operations and the accelerations are bit-identical. Fast: the kernel is
    // built with -cl-fast-relaxed-math and rsqrt (what a GPU benchmark runs); within kFastTolerance.
    bool fast_math = false;
    // Work-items per body (a power of two up to 64), each summing every lanes-th body: a chunk
    // of c bodies fills c * lanes work-items, so a GPU saturates on chunks `lanes` times smaller
    // (one work-item per body needs ~270k bodies in flight on an H200). The host sums the same
    // way, so the results do not depend on the device.
    std::size_t lanes = 16;
  };
  // Relative to the RMS acceleration (components near 0 cancel): rsqrt's few ulps and fused
  // multiply-adds over n terms.
  static constexpr double kFastTolerance = 1e-4;

  NBodyLoop(Controller& c, const Params& p);
  std::size_t size() const { return p_.n; }
  std::vector<Access> reads() const { return {in(pos_mass_)}; }
  std::vector<Access> writes(std::size_t begin, std::size_t end) const { return {out(span_of(acc_, begin, end))}; }
  void cpu(std::size_t begin, std::size_t end);
  void device(Controller& c, std::size_t begin, std::size_t end);
  void before_step() {}
  void after_step() {}
  std::vector<Access> before_step_accesses() const { return {}; }
  std::vector<Access> after_step_accesses() const { return {}; }

  void upload(Controller& c) { c.move_to(pos_mass_); }
  void fetch(Controller& c, std::size_t begin, std::size_t end) { c.move_from(span_of(acc_, begin, end)); }
  void clear_output();  // NaN, which no iteration writes
  const Tile<Vec4>& output() const { return acc_; }
  // (ax, ay, az, 0) per body, by a plain sequential loop.
  std::vector<float> reference() const;
  // Exact mode: any difference beyond 0 ulp is reported in `differing`; the tolerance is
  // kFastTolerance either way, since a device may contract despite the pragma.
  LoopCheck check(const std::vector<float>& ref) const;

 private:
  Params p_;
  float eps2_;
  Tile<Vec4> pos_mass_, acc_;
  Kernel kernel_;
};

}  // namespace hetflow::workloads
