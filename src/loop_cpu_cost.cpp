#include "loop_cpu_cost.hpp"

#include <algorithm>

namespace hetflow::detail {

void CpuCostProfile::restart(std::size_t n) {
  n_ = n;
  ++call_;
  costliest_ = 0;  // recomputed, so one bin's old outlier fades once the bin is run again
  for (std::size_t b = 0; b < kBins; ++b)
    if (iterations_[b] > 0) costliest_ = std::max(costliest_, seconds_[b] / iterations_[b]);
  all_seconds_ *= 0.5, all_iterations_ *= 0.5;
  stale_ = true;
}

void CpuCostProfile::record(std::size_t begin, std::size_t iterations, double seconds) {
  if (iterations == 0 || !(seconds > 0) || n_ == 0) return;
  // Spread evenly over the chunk: within one chunk nothing finer is known.
  const double per = seconds / double(iterations);
  const std::size_t end = std::min(n_, begin + iterations);
  for (std::size_t i = begin; i < end;) {
    const std::size_t b = bin_of(i), next = std::min(end, bin_begin(b + 1));
    const double in_bin = double(std::max<std::size_t>(1, next - i));
    if (call_of_bin_[b] != call_) {  // the bin's older calls weigh half against this one
      call_of_bin_[b] = call_;
      seconds_[b] *= 0.5, iterations_[b] *= 0.5;
    }
    seconds_[b] += per * in_bin, iterations_[b] += in_bin;
    costliest_ = std::max(costliest_, seconds_[b] / iterations_[b]);
    i = std::max(next, i + 1);
  }
  all_seconds_ += seconds, all_iterations_ += double(iterations);
  stale_ = true;
}

double CpuCostProfile::measured_cost(std::size_t b) const {
  const double mean = all_seconds_ / all_iterations_;
  // As if the bin had also run a quarter iteration at the mean: a bin seen over a single iteration
  // leans a fifth on the mean, one seen over dozens hardly at all.
  return (seconds_[b] + 0.25 * mean) / (iterations_[b] + 0.25);
}

const CpuCostProfile::Prices& CpuCostProfile::priced() const {
  if (!stale_) return prices_;
  stale_ = false;
  // From the end: a bin not covered costs its nearest covered successor's price, doubled per bin
  // between them. Doubling lets a share grow into unknown bins a few at a time, each call measuring
  // what the last one guessed; R-MAT's neighbouring bins differ up to 3.2x (1.52 / 0.48 per bit of
  // the row), Barnes-Hut's by a few percent.
  double after = 0;    // the price of the bin after this one, 0 while none after it is covered
  double covered = 0;  // the nearest covered bin's after this one, 0 while none
  for (std::size_t k = kBins; k-- > 0;) {
    double c = costliest_;
    if (iterations_[k] > 0)
      c = covered = measured_cost(k);
    else if (guess_ && after > 0)
      c = std::min(costliest_, 2 * after);
    prices_.cost[k] = c;
    prices_.likely[k] = iterations_[k] == 0 && guess_ && covered > 0 ? covered : c;
    after = iterations_[k] > 0 || after > 0 ? c : 0;
    const std::size_t begin = std::min(n_, bin_begin(k)), end = std::min(n_, bin_begin(k + 1));
    prices_.tail[k] = prices_.tail[k + 1] + double(end > begin ? end - begin : 0) * c;
  }
  return prices_;
}

double CpuCostProfile::seconds(std::size_t begin, std::size_t iterations, Pricing pricing) const {
  if (!measured() || iterations == 0) return 0;
  if (n_ == 0) return double(iterations) * all_seconds_ / all_iterations_;
  double total = 0;
  const std::size_t end = begin + iterations;
  for (std::size_t i = begin; i < end;) {
    // Past the range (a caller's rounding): the last bin's cost.
    const std::size_t b = bin_of(std::min(i, n_ - 1));
    const std::size_t next = b + 1 == kBins ? end : std::min(end, bin_begin(b + 1));
    const std::size_t count = std::max<std::size_t>(1, next - i);
    total += double(count) * cost(b, pricing);
    i += count;
  }
  return total;
}

double CpuCostProfile::rate(std::size_t begin, std::size_t iterations) const {
  const double s = seconds(begin, std::max<std::size_t>(1, iterations));
  return s > 0 ? double(std::max<std::size_t>(1, iterations)) / s : 0;
}

std::size_t CpuCostProfile::within(std::size_t begin, double seconds, std::size_t cap, Pricing pricing) const {
  if (!measured() || !(seconds > 0)) return 0;
  std::size_t taken = 0;
  double left = seconds;
  while (taken < cap) {
    const std::size_t i = begin + taken;
    const std::size_t b = n_ ? bin_of(std::min(i, n_ - 1)) : 0;
    const std::size_t bin_end = n_ == 0 || b + 1 == kBins ? begin + cap : std::min(begin + cap, bin_begin(b + 1));
    const std::size_t count = std::max<std::size_t>(1, bin_end - i);
    const double c = n_ ? cost(b, pricing) : all_seconds_ / all_iterations_;
    if (double(count) * c > left) return taken + std::size_t(left / c);
    left -= double(count) * c;
    taken += count;
  }
  return cap;
}

std::size_t CpuCostProfile::within_tail(double seconds, std::size_t cap) const {
  if (!measured() || !(seconds > 0) || n_ == 0) return 0;
  cap = std::min(cap, n_);
  const Prices& p = priced();
  // The first bin whose tail fits (tail[] falls towards the end, to 0); then part of the bin before it.
  const std::size_t b = std::size_t(
      std::partition_point(p.tail.begin(), p.tail.end(), [&](double t) { return t > seconds; }) - p.tail.begin());
  std::size_t taken = n_ - std::min(n_, bin_begin(b));
  if (b > 0 && taken < cap) taken += std::size_t((seconds - p.tail[b]) / p.cost[b - 1]);
  return std::min(taken, cap);
}

std::size_t CpuCostProfile::covered_tail() const {
  std::size_t b = kBins;
  while (b > 0 && iterations_[b - 1] > 0) --b;
  return n_ - std::min(n_, bin_begin(b));
}

double CpuCostProfile::cheapest() const {
  double least = 0;
  for (std::size_t b = 0; b < kBins; ++b)
    if (iterations_[b] > 0) least = least > 0 ? std::min(least, measured_cost(b)) : measured_cost(b);
  return least;
}

}  // namespace hetflow::detail
