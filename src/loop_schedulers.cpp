#include "loop_schedulers.hpp"

#include <algorithm>
#include <cmath>

namespace hetflow::detail {

std::size_t LoopScheduler::cpu_chunk(std::size_t remaining) {
  if (remaining == 0) return 0;
  std::lock_guard lock(m_);
  return std::min(next_cpu(remaining), remaining);
}

std::size_t LoopScheduler::device_chunk(std::size_t remaining) {
  if (remaining == 0) return 0;
  std::lock_guard lock(m_);
  return std::min(next_device(remaining), remaining);
}

void LoopScheduler::record_cpu(std::size_t iterations, double seconds) {
  if (iterations == 0 || !(seconds > 0)) return;
  std::lock_guard lock(m_);
  on_cpu(iterations, seconds);
}

void LoopScheduler::record_device(std::size_t iterations, double seconds) {
  if (iterations == 0 || !(seconds > 0)) return;
  std::lock_guard lock(m_);
  on_device(iterations, seconds);
}

void LoopScheduler::restart(std::size_t iterations, double last_call_seconds) {
  std::lock_guard lock(m_);
  on_restart(iterations, last_call_seconds);
}

std::size_t round_up_64(std::size_t n, std::size_t cap) {
  const std::size_t up = n % 64 == 0 ? n : n + (64 - n % 64);
  return std::max<std::size_t>(1, std::min(up, cap));
}

// ---- Static ----------------------------------------------------------------------------------

StaticScheduler::StaticScheduler(unsigned cpu_workers, double device_share)
    : LoopScheduler(cpu_workers), share_(std::clamp(device_share, 0.0, 1.0)) {}

std::string StaticScheduler::name() const { return "static(" + std::to_string(share_) + ")"; }

void StaticScheduler::on_restart(std::size_t iterations, double) {
  total_ = iterations;
  device_left_ = std::size_t(std::llround(share_ * double(iterations)));
  device_given_ = false;
  const std::size_t cpu_part = iterations - device_left_;
  cpu_chunk_ = std::max<std::size_t>(1, (cpu_part + cpu_workers_ - 1) / cpu_workers_);
}

std::size_t StaticScheduler::next_device(std::size_t remaining) {
  if (device_given_ || device_left_ == 0) return 0;
  device_given_ = true;
  return std::min(device_left_, remaining);
}

std::size_t StaticScheduler::next_cpu(std::size_t remaining) {
  // The device's share stays reserved until it has taken it.
  const std::size_t reserved = device_given_ ? 0 : device_left_;
  if (remaining <= reserved) return 0;
  return std::min(cpu_chunk_, remaining - reserved);
}

// ---- Dynamic ---------------------------------------------------------------------------------

DynamicScheduler::DynamicScheduler(unsigned cpu_workers, std::size_t chunk)
    : LoopScheduler(cpu_workers), chunk_(std::max<std::size_t>(1, chunk)) {}

std::string DynamicScheduler::name() const { return "dynamic(" + std::to_string(chunk_) + ")"; }
std::size_t DynamicScheduler::next_cpu(std::size_t) { return chunk_; }
std::size_t DynamicScheduler::next_device(std::size_t) { return chunk_; }

// ---- LogFit ----------------------------------------------------------------------------------

LogFitScheduler::LogFitScheduler(unsigned cpu_workers, double elbow_gain)
    : LoopScheduler(cpu_workers), elbow_gain_(elbow_gain) {}

std::string LogFitScheduler::name() const { return "logfit"; }

void LogFitScheduler::on_restart(std::size_t, double) {
  warm_up_ = true;
  device_stopped_ = false;
  if (phase_ == Phase::final) phase_ = Phase::stable;  // the model holds across calls
}

void LogFitScheduler::fit() {
  // Least squares of thr = a·ln(chunk) + b.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = double(samples_.size());
  for (const auto& s : samples_) {
    const double x = std::log(double(s.chunk));
    sx += x, sy += s.throughput, sxx += x * x, sxy += x * s.throughput;
  }
  const double var = n * sxx - sx * sx;
  if (samples_.size() < 2 || var <= 0) return;
  a_ = (n * sxy - sx * sy) / var;
  b_ = (sy - a_ * sx) / n;
}

bool LogFitScheduler::final_phase_due(std::size_t remaining) const {
  if (phase_ != Phase::stable || cpu_thr_ <= 0 || device_thr_ <= 0) return false;
  const double f = device_thr_ / cpu_thr_;
  const double chunk = double(stable_chunk_);
  return double(remaining) < chunk || chunk / f > (double(remaining) - chunk) / double(cpu_workers_);
}

std::size_t LogFitScheduler::next_device(std::size_t remaining) {
  if (device_stopped_) return 0;
  if (warm_up_) {
    asked_ = 1;
    return 1;
  }
  if (final_phase_due(remaining)) phase_ = Phase::final;
  std::size_t chunk = 0;
  switch (phase_) {
    case Phase::exploration:
      chunk = exploring_chunk_;
      break;
    case Phase::stable:
      chunk = round_up_64(stable_chunk_, remaining);
      break;
    case Phase::final: {
      // What is left, split so both sides end together — or all on the faster side, if that is
      // sooner.
      const double n_cpu = double(cpu_workers_) * cpu_thr_, rem = double(remaining);
      const double split = device_thr_ * rem / (n_cpu + device_thr_);
      const double t_split = split / device_thr_, t_device = rem / device_thr_, t_cpu = rem / n_cpu;
      if (t_cpu <= t_split && t_cpu <= t_device) {
        device_stopped_ = true;
        return 0;
      }
      chunk = t_device <= t_split ? remaining : std::size_t(std::llround(split));
      device_stopped_ = true;  // its last chunk of this call
      if (chunk == 0) return 0;
      break;
    }
  }
  asked_ = std::min(chunk, remaining);
  return asked_;
}

std::size_t LogFitScheduler::next_cpu(std::size_t remaining) {
  if (device_stopped_ || device_thr_ <= 0 || cpu_thr_ <= 0) {
    // Nothing measured yet (or the device is done): a fair share for each worker, small at first.
    const std::size_t share = std::max<std::size_t>(1, remaining / (cpu_workers_ + (device_stopped_ ? 0 : 1)));
    return cpu_thr_ <= 0 && !device_stopped_ ? std::min<std::size_t>(share, 64) : share;
  }
  const double f = device_thr_ / cpu_thr_;
  const double device_chunk = double(phase_ == Phase::exploration ? exploring_chunk_ : stable_chunk_);
  const double chunk = std::max(1.0, std::min(device_chunk / f, double(remaining) / (f + double(cpu_workers_))));
  return round_up_64(std::size_t(chunk), remaining);
}

void LogFitScheduler::on_cpu(std::size_t iterations, double seconds) {
  const double thr = double(iterations) / seconds;
  cpu_thr_ = cpu_thr_ <= 0 ? thr : 0.5 * cpu_thr_ + 0.5 * thr;
}

void LogFitScheduler::on_device(std::size_t iterations, double seconds) {
  const double thr = double(iterations) / seconds;
  if (warm_up_) {  // the first chunk of a call pays start-up costs: not a sample
    warm_up_ = false;
    return;
  }
  device_thr_ = thr;
  if (phase_ == Phase::exploration) {
    samples_.push_back({iterations, thr});
    const bool truncated = iterations < exploring_chunk_;
    exploring_chunk_ *= 2;
    const std::size_t k = samples_.size();
    auto gain = [&](std::size_t i) {  // relative throughput gain per relative chunk growth
      const double growth = double(samples_[i].chunk) / double(samples_[i - 1].chunk) - 1.0;
      return growth > 0 ? (samples_[i].throughput / samples_[i - 1].throughput - 1.0) / growth : 0.0;
    };
    const bool elbow = k >= 4 && gain(k - 1) <= elbow_gain_ && gain(k - 2) <= elbow_gain_;
    if ((elbow || truncated) && k >= 2) {
      fit();
      // The tangent point: the chunk where the fitted curve's slope falls to the elbow's.
      const std::size_t elbow_chunk = samples_[k - 2].chunk;
      threshold_ = a_ > 0 ? a_ / double(elbow_chunk) : 0;
      stable_chunk_ = threshold_ > 0 ? std::size_t(a_ / threshold_) : elbow_chunk;
      phase_ = Phase::stable;
      worse_in_a_row_ = 0;
    }
    return;
  }
  if (phase_ != Phase::stable) return;
  const double predicted = a_ * std::log(double(iterations)) + b_;
  if (thr >= 0.9 * predicted) {
    worse_in_a_row_ = 0;
    // Replace the sample of its power-of-two interval and refit.
    auto bucket = [](std::size_t c) { return std::size_t(std::log2(double(c))); };
    auto it = std::find_if(samples_.begin(), samples_.end(), [&](const Sample& s) { return bucket(s.chunk) == bucket(iterations); });
    if (it != samples_.end())
      *it = {iterations, thr};
    else
      samples_.push_back({iterations, thr});
    fit();
    if (threshold_ > 0 && a_ > 0) stable_chunk_ = std::size_t(a_ / threshold_);
    return;
  }
  // Two chunks in a row well under the model: the device's behaviour changed; explore again.
  if (++worse_in_a_row_ >= 2) {
    samples_.clear();
    exploring_chunk_ = 1;
    phase_ = Phase::exploration;
    worse_in_a_row_ = 0;
  }
}

// ---- HGuided --------------------------------------------------------------------------------

HGuidedScheduler::HGuidedScheduler(unsigned cpu_workers, double k, std::size_t min_chunk)
    : LoopScheduler(cpu_workers), k_(k > 0 ? k : 2.0), min_chunk_(std::max<std::size_t>(1, min_chunk)) {}

std::string HGuidedScheduler::name() const { return "hguided"; }

std::size_t HGuidedScheduler::package(std::size_t remaining, double power) const {
  const double total = double(cpu_workers_) * cpu_thr_ + device_thr_;
  const double size = double(remaining) * power / (k_ * total);
  return std::min(remaining, std::max(min_chunk_, round_up_64(std::size_t(size), remaining)));
}

std::size_t HGuidedScheduler::next_cpu(std::size_t remaining) {
  // Unmeasured yet, a worker probes with a small package.
  if (cpu_thr_ <= 0 || device_thr_ <= 0) return std::min(remaining, min_chunk_);
  return package(remaining, cpu_thr_);
}

std::size_t HGuidedScheduler::next_device(std::size_t remaining) {
  // A device's throughput depends on the package (small ones leave it idle), so its probe is a
  // full-sized package as if it were one more worker: a small probe would make it look weak and
  // keep its packages small.
  if (device_thr_ <= 0 || cpu_thr_ <= 0)
    return std::min(remaining, std::max(min_chunk_, round_up_64(std::size_t(double(remaining) / (k_ * (cpu_workers_ + 1))), remaining)));
  return package(remaining, device_thr_);
}

void HGuidedScheduler::on_cpu(std::size_t iterations, double seconds) {
  const double thr = double(iterations) / seconds;
  cpu_thr_ = cpu_thr_ <= 0 ? thr : 0.5 * cpu_thr_ + 0.5 * thr;
}

void HGuidedScheduler::on_device(std::size_t iterations, double seconds) {
  const double thr = double(iterations) / seconds;
  device_thr_ = device_thr_ <= 0 ? thr : 0.5 * device_thr_ + 0.5 * thr;
}

// ---- Oracle ----------------------------------------------------------------------------------

OracleScheduler::OracleScheduler(unsigned cpu_workers) : StaticScheduler(cpu_workers, 0.0) {
  for (int i = 0; i <= 10; ++i) candidates_.push_back(i / 10.0);
}

std::string OracleScheduler::name() const { return "oracle"; }

void OracleScheduler::on_restart(std::size_t iterations, double last_call_seconds) {
  if (last_call_seconds > 0 && next_ > 0 && next_ <= candidates_.size()) {
    if (best_seconds_ <= 0 || last_call_seconds < best_seconds_) best_seconds_ = last_call_seconds, best_share_ = current_;
  }
  if (next_ == candidates_.size() && !refined_) {
    refined_ = true;  // the coarse grid is done: steps of 0.02 around its best
    for (int i = -4; i <= 4; ++i) {
      const double c = best_share_ + i * 0.02;
      if (i != 0 && c >= 0 && c <= 1) candidates_.push_back(c);
    }
  }
  current_ = next_ < candidates_.size() ? candidates_[next_++] : best_share_;
  set_share(current_);
  StaticScheduler::on_restart(iterations, last_call_seconds);
}

}  // namespace hetflow::detail
