#pragma once
// What one CPU worker spends per iteration of a loop, by where in the range (the heterogeneous
// loop's schedulers, src/loop_schedulers.hpp). An irregular loop's iterations differ in cost from
// one part of the range to another, and the same parts stay costly from one call (time step) to
// the next: Barnes-Hut's bodies in tree order cost 5 to 48 us each by region (one core here,
// 256-body samples across 1M bodies), so a throughput measured on the chunks a worker happened to
// run last was off up to tenfold, and a CPU package sized from it at the end of a call held the
// call 2-10x past the devices (perf/RESULTS.md, two H100s, 2026-11-25). The range is cut into
// bins; each CPU chunk's time is spread over the bins it covered. A bin no chunk has covered yet
// is priced as the costliest covered, or (where the constructor asks: a loop over one device) from the nearest
// covered bin after it, doubled per bin between them. Priced at the mean, a bin holding some of an
// R-MAT matrix's heaviest rows was handed to one worker as a 1 ms chunk that took 17 (simulated SpMV
// over two GPUs; its devices had ended at 2 ms). Priced as the costliest always, that matrix's nearly
// empty tail looked as costly as its first rows (~10,000x), so the CPU was never given it and never
// learned otherwise (one H100, perf/RESULTS.md 2026-11-27 02:36Z). Priced from the bin after it:
// the CPU's share of a call is the range's tail (the devices take theirs from the front), so what it
// knows grows from the end towards the front, a few bins a call as the doubling lets it. In a bin a
// chunk runs, the older calls weigh half as much as the new one, so the profile follows a loop whose
// costs drift. A bin no chunk runs keeps its price: halved at every call, the prices of bins the CPU
// no longer ran leaned, after ten calls, on the mean of all it ran (the mean's quarter iteration
// outweighed 16 iterations / 2^10), so Mandelbrot's rows through the set looked a tenth of their cost
// to a plan on one H200 (2026-11-28), which then saw the CPU joining the device's share and stopped
// cutting it for the transfer back: 3.5 -> 4.0 ms a call from the 11th call.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace hetflow::detail {

class CpuCostProfile {
 public:
  // `guess_from_the_tail`: price a bin not covered from its covered successor (doubled per bin),
  // else as the costliest covered. Off, every such bin is the costliest: a loop over several devices
  // leaves the CPU the least, and its guessed-cheap bins drew 220 chunks of 100 us each into one
  // call (4.9 ms where one GPU alone takes 2.8: simulated SpMV over two GPUs).
  explicit CpuCostProfile(bool guess_from_the_tail = true) : guess_(guess_from_the_tail) {}
  // A new call over [0, n).
  void restart(std::size_t n);
  // One worker ran [begin, begin + iterations) in `seconds`.
  void record(std::size_t begin, std::size_t iterations, double seconds);
  bool measured() const { return all_iterations_ > 0; }
  // How a bin no chunk has covered is priced. `cautious`: doubled per bin from its covered
  // successor (above), for "does it end in time" — it over-prices. `likely`: its covered successor's
  // price as it is, for dividing work evenly: the doubled prices of a share's six new bins in front
  // of the covered tail (2x to 64x) made an even-cost split's front parts a few rows each and its
  // last part the whole covered tail, 481 Mandelbrot rows on one worker (8.9 ms where the other
  // parts ended by 1.3; one H200, perf/RESULTS.md 2026-11-28 16:28Z).
  enum class Pricing { cautious, likely };
  // Seconds one worker is predicted to spend on [begin, begin + iterations) (0 before any record).
  double seconds(std::size_t begin, std::size_t iterations, Pricing pricing = Pricing::cautious) const;
  // Iterations per second of one worker over [begin, begin + iterations) (0 before any record).
  double rate(std::size_t begin, std::size_t iterations) const;
  // The most iterations from `begin` (at most `cap`) one worker is predicted to end within `seconds`.
  std::size_t within(std::size_t begin, double seconds, std::size_t cap, Pricing pricing = Pricing::cautious) const;
  // The most iterations at the range's end (at most `cap` of them) whose predicted seconds add up to
  // no more than `seconds`: what the workers, together, end of the tail by then.
  std::size_t within_tail(double seconds, std::size_t cap) const;
  // How many iterations at the range's end lie in bins chunks have covered, without a gap: past
  // them the tail's prices are guesses.
  std::size_t covered_tail() const;
  // Seconds per iteration of the cheapest bin covered (0 before any record).
  double cheapest() const;

 private:
  static constexpr std::size_t kBins = 256;
  // In 128 bits: i * kBins and b * n_ overflow a size_t from n = 2^56, and record() then never got
  // past a bin whose next edge wrapped below it (a CPU loop over 2^56 iterations spun for ever).
  __extension__ using Wide = unsigned __int128;
  std::size_t bin_of(std::size_t i) const { return n_ ? std::min(kBins - 1, std::size_t(Wide(i) * kBins / n_)) : 0; }
  std::size_t bin_begin(std::size_t b) const { return std::size_t((Wide(b) * n_ + kBins - 1) / kBins); }
  double cost(std::size_t b, Pricing pricing = Pricing::cautious) const {  // predicted seconds per iteration in bin b
    return pricing == Pricing::likely ? priced().likely[b] : priced().cost[b];
  }
  double measured_cost(std::size_t b) const;  // of a covered bin
  struct Prices {
    std::vector<double> cost = std::vector<double>(kBins, 0.0);
    std::vector<double> likely = std::vector<double>(kBins, 0.0);    // Pricing::likely's
    std::vector<double> tail = std::vector<double>(kBins + 1, 0.0);  // tail[b]: seconds of [bin_begin(b), n)
  };
  // Recomputed after a record or a restart, once: the schedulers ask many times in between.
  const Prices& priced() const;
  std::size_t n_ = 0;
  std::vector<double> seconds_ = std::vector<double>(kBins, 0.0), iterations_ = std::vector<double>(kBins, 0.0);
  std::vector<std::size_t> call_of_bin_ = std::vector<std::size_t>(kBins, 0);  // the call that last ran it
  std::size_t call_ = 0;
  double all_seconds_ = 0, all_iterations_ = 0;
  double costliest_ = 0;  // seconds per iteration of the costliest bin covered
  bool guess_;
  mutable Prices prices_;
  mutable bool stale_ = true;
};

}  // namespace hetflow::detail
