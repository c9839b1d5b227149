// The four loop workloads (loop_workloads.hpp) behind one interface, by name: what `hetflow run`,
// perf/bench_loops and the tests drive through hetflow::parallel_for.
#pragma once
#include <hetflow/parallel_for.hpp>

#include <memory>
#include <string>
#include <vector>

#include "workloads/loop_common.hpp"

namespace hetflow::workloads {

class LoopWorkload {
 public:
  virtual ~LoopWorkload() = default;
  virtual std::string describe() const = 0;  // "barneshut, 100000 bodies"
  virtual std::size_t size() const = 0;      // iterations of one call
  virtual LoopBody body() = 0;               // its CPU body, kernel launch, reads and writes
  virtual void before_call() = 0;            // host work between calls (Barnes-Hut: the tree)
  virtual void clear_output() = 0;           // so that an iteration that did not run shows
  virtual LoopCheck check() const = 0;       // against the sequential reference (one core; computed once)
};

// "mandelbrot" (size: image side, rows are iterations), "nbody" (bodies), "spmv" (R-MAT scale: 2^size
// rows), "barneshut" (bodies). size 0 = the workload's small default. fast_math: the kernels GPUs run
// (N-body, Barnes-Hut), checked within tolerance instead of bit for bit. UsageError for other names.
std::unique_ptr<LoopWorkload> make_loop_workload(Controller& c, const std::string& name, std::size_t size,
                                                 bool fast_math = false);
const std::vector<std::string>& loop_workload_names();

// The sizes make_loop_workload accepts for `name`, and what a size means ("an R-MAT scale").
struct LoopSizeRange {
  std::size_t min, max;
  std::string what;
};
LoopSizeRange loop_size_range(const std::string& name);

}  // namespace hetflow::workloads
