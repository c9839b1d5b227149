#pragma once
// What one CPU worker spends per iteration of a loop, by where in the range (the heterogeneous
// loop's schedulers, src/loop_schedulers.hpp). An irregular loop's iterations differ in cost from
// one part of the range to another, and the same parts stay costly from one call (time step) to
// the next: Barnes-Hut's bodies in tree order cost 5 to 48 us each by region (one core here,
// 256-body samples across 1M bodies), so a throughput measured on the chunks a worker happened to
// run last was off up to tenfold, and a CPU package sized from it at the end of a call held the
// call 2-10x past the devices (perf/RESULTS.md, two H100s, 2026-11-25). The range is cut into
// bins; each CPU chunk's time is spread over the bins it covered; a bin no chunk has covered yet
// costs as much as the costliest one covered: priced at the mean, a bin holding some of an R-MAT
// matrix's heaviest rows was handed to one worker as a 1 ms chunk that took 17 (simulated SpMV over
// two GPUs; its devices had ended at 2 ms). Older calls weigh half as much at each new call, so the
// profile follows a loop whose costs drift.
#include <cstddef>
#include <vector>

namespace hetflow::detail {

class CpuCostProfile {
 public:
  // A new call over [0, n).
  void restart(std::size_t n);
  // One worker ran [begin, begin + iterations) in `seconds`.
  void record(std::size_t begin, std::size_t iterations, double seconds);
  bool measured() const { return all_iterations_ > 0; }
  // Seconds one worker is predicted to spend on [begin, begin + iterations) (0 before any record).
  double seconds(std::size_t begin, std::size_t iterations) const;
  // Iterations per second of one worker over [begin, begin + iterations) (0 before any record).
  double rate(std::size_t begin, std::size_t iterations) const;
  // The most iterations from `begin` (at most `cap`) one worker is predicted to end within `seconds`.
  std::size_t within(std::size_t begin, double seconds, std::size_t cap) const;

 private:
  static constexpr std::size_t kBins = 256;
  std::size_t bin_of(std::size_t i) const { return n_ ? std::min(kBins - 1, i * kBins / n_) : 0; }
  std::size_t bin_begin(std::size_t b) const { return (b * n_ + kBins - 1) / kBins; }
  double cost(std::size_t b) const;  // predicted seconds per iteration in bin b
  std::size_t n_ = 0;
  std::vector<double> seconds_ = std::vector<double>(kBins, 0.0), iterations_ = std::vector<double>(kBins, 0.0);
  double all_seconds_ = 0, all_iterations_ = 0;
  double costliest_ = 0;  // seconds per iteration of the costliest bin covered
};

}  // namespace hetflow::detail
