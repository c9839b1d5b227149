#include "loop_cpu_cost.hpp"

#include <algorithm>

namespace hetflow::detail {

void CpuCostProfile::restart(std::size_t n) {
  n_ = n;
  costliest_ = 0;  // halving keeps each bin's cost: recomputed, so one bin's old outlier fades
  for (std::size_t b = 0; b < kBins; ++b) {
    seconds_[b] *= 0.5, iterations_[b] *= 0.5;
    if (iterations_[b] > 0) costliest_ = std::max(costliest_, seconds_[b] / iterations_[b]);
  }
  all_seconds_ *= 0.5, all_iterations_ *= 0.5;
}

void CpuCostProfile::record(std::size_t begin, std::size_t iterations, double seconds) {
  if (iterations == 0 || !(seconds > 0) || n_ == 0) return;
  // Spread evenly over the chunk: within one chunk nothing finer is known.
  const double per = seconds / double(iterations);
  const std::size_t end = std::min(n_, begin + iterations);
  for (std::size_t i = begin; i < end;) {
    const std::size_t b = bin_of(i), next = std::min(end, bin_begin(b + 1));
    const double in_bin = double(std::max<std::size_t>(1, next - i));
    seconds_[b] += per * in_bin, iterations_[b] += in_bin;
    costliest_ = std::max(costliest_, seconds_[b] / iterations_[b]);
    i = std::max(next, i + 1);
  }
  all_seconds_ += seconds, all_iterations_ += double(iterations);
}

double CpuCostProfile::cost(std::size_t b) const {
  if (!(iterations_[b] > 0)) return costliest_;
  const double mean = all_seconds_ / all_iterations_;
  // As if the bin had also run a quarter iteration at the mean: a bin seen over a single iteration
  // leans a fifth on the mean, one seen over dozens hardly at all.
  return (seconds_[b] + 0.25 * mean) / (iterations_[b] + 0.25);
}

double CpuCostProfile::seconds(std::size_t begin, std::size_t iterations) const {
  if (!measured() || iterations == 0) return 0;
  if (n_ == 0) return double(iterations) * all_seconds_ / all_iterations_;
  double total = 0;
  const std::size_t end = begin + iterations;
  for (std::size_t i = begin; i < end;) {
    // Past the range (a caller's rounding): the last bin's cost.
    const std::size_t b = bin_of(std::min(i, n_ - 1));
    const std::size_t next = b + 1 == kBins ? end : std::min(end, bin_begin(b + 1));
    const std::size_t count = std::max<std::size_t>(1, next - i);
    total += double(count) * cost(b);
    i += count;
  }
  return total;
}

double CpuCostProfile::rate(std::size_t begin, std::size_t iterations) const {
  const double s = seconds(begin, std::max<std::size_t>(1, iterations));
  return s > 0 ? double(std::max<std::size_t>(1, iterations)) / s : 0;
}

std::size_t CpuCostProfile::within(std::size_t begin, double seconds, std::size_t cap) const {
  if (!measured() || !(seconds > 0)) return 0;
  std::size_t taken = 0;
  double left = seconds;
  while (taken < cap) {
    const std::size_t i = begin + taken;
    const std::size_t b = n_ ? bin_of(std::min(i, n_ - 1)) : 0;
    const std::size_t bin_end = n_ == 0 || b + 1 == kBins ? begin + cap : std::min(begin + cap, bin_begin(b + 1));
    const std::size_t count = std::max<std::size_t>(1, bin_end - i);
    const double c = n_ ? cost(b) : all_seconds_ / all_iterations_;
    if (double(count) * c > left) return taken + std::size_t(left / c);
    left -= double(count) * c;
    taken += count;
  }
  return cap;
}

}  // namespace hetflow::detail
