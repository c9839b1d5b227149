#pragma once
// What a device would take for a CPU chunk's tail (the heterogeneous loop's hand-over,
// LoopState::yield_tail), from the chunks it has run. Priced at its latest chunk's time per
// iteration, a device whose latest chunk was small looked slow: N-body 32K's first call on one
// H200 ended its exploration with LogFit's 1-body leftover (a 0.204 ms kernel; 64 bodies took
// 0.217), so a 60-body tail was priced at 12 ms and the CPU kept it (perf/RESULTS.md,
// 2026-11-29). A kernel's time is mostly its launch and ramp at small sizes, so the rate is the
// largest chunk's (the most iterations behind one figure), and no tail is priced below the least
// kernel time seen (what even one iteration costs). What the device spends beside its kernels
// (launch, the wait in its queue, the notice of its end, the transfer back) is its latest chunk's.
#include <algorithm>
#include <cstddef>
#include <limits>

namespace hetflow::detail {

class DeviceTailPrice {
 public:
  // A chunk of `iterations` whose kernels took `kernel_seconds`, `round_trip_seconds` from its
  // launch to the notice of its end.
  void record(std::size_t iterations, double kernel_seconds, double round_trip_seconds) {
    if (iterations == 0 || kernel_seconds <= 0) return;
    if (iterations >= largest_iterations_) largest_iterations_ = iterations, largest_seconds_ = kernel_seconds;
    least_seconds_ = std::min(least_seconds_, kernel_seconds);
    beside_seconds_ = std::max(0.0, round_trip_seconds - kernel_seconds);
  }
  bool known() const { return largest_iterations_ > 0; }
  // Predicted seconds from launch to end for `iterations`, with at least `least_beside` seconds
  // beside the kernels (0 before any record).
  double seconds(std::size_t iterations, double least_beside) const {
    if (!known()) return 0;
    const double kernel = std::max(least_seconds_, largest_seconds_ / double(largest_iterations_) * double(iterations));
    return kernel + std::max(least_beside, beside_seconds_);
  }

 private:
  std::size_t largest_iterations_ = 0;
  double largest_seconds_ = 0;
  double least_seconds_ = std::numeric_limits<double>::infinity();
  double beside_seconds_ = 0;
};

}  // namespace hetflow::detail
