// Mandelbrot by rows, a heterogeneous loop workload (issue 15; research next-features A6 #2):
// iteration y computes row y's escape counts. Irregular (rows crossing the set run to max_iter),
// compute-bound, no input. The CPU body and kernels_cl/mandelbrot.cl do the same float operations
// in the same order with contraction off, so the counts are identical on both sides.
#pragma once
#include <hetflow/controller.hpp>

#include <cstdint>
#include <vector>

#include "workloads/loop_common.hpp"

namespace hetflow::workloads {

class MandelbrotLoop {
 public:
  struct Params {
    std::size_t width = 1024, height = 1024;
    int max_iter = 2048;
    // The window: the classic whole-set view, whose middle rows cross the set (max_iter per pixel)
    // and whose top and bottom rows escape in a few iterations.
    float x0 = -2.25f, y0 = -1.5f, x1 = 0.75f, y1 = 1.5f;
  };

  MandelbrotLoop(Controller& c, const Params& p);
  std::size_t size() const { return p_.height; }
  std::vector<Access> reads() const { return {}; }
  std::vector<Access> writes(std::size_t begin, std::size_t end) const;
  void cpu(std::size_t begin, std::size_t end);
  void device(Controller& c, std::size_t begin, std::size_t end);
  void before_step() {}
  void after_step() {}
  std::vector<Access> before_step_accesses() const { return {}; }
  std::vector<Access> after_step_accesses() const { return {}; }

  // Test and benchmark helpers: no inputs to upload; D2H of the rows a device chunk wrote.
  void upload(Controller&) {}
  void fetch(Controller& c, std::size_t begin, std::size_t end);
  // Fills the output's host image with -1, which no iteration writes.
  void clear_output();
  const Tile<std::int32_t>& output() const { return counts_; }
  // Row-major width x height counts, by a plain sequential loop.
  std::vector<std::int32_t> reference() const;
  LoopCheck check(const std::vector<std::int32_t>& ref) const;  // exact

 private:
  Params p_;
  float dx_, dy_;
  Tile<std::int32_t> counts_;
  Kernel kernel_;
};

}  // namespace hetflow::workloads
