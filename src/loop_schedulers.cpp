#include "loop_schedulers.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hetflow::detail {

std::size_t LoopScheduler::cpu_chunk(std::size_t remaining, double now) {
  if (remaining == 0) return 0;
  std::lock_guard lock(m_);
  return std::min(next_cpu(remaining, now), remaining);
}

std::size_t LoopScheduler::device_chunk(unsigned d, std::size_t remaining, double now) {
  if (remaining == 0 || d >= devices_) return 0;
  std::lock_guard lock(m_);
  return std::min(next_device(d, remaining, now), remaining);
}

void LoopScheduler::record_cpu(std::size_t iterations, double seconds) {
  if (iterations == 0 || !(seconds > 0)) return;
  std::lock_guard lock(m_);
  on_cpu(iterations, seconds);
}

void LoopScheduler::record_device(unsigned d, std::size_t iterations, double seconds, double round_trip) {
  if (iterations == 0 || !(seconds > 0) || d >= devices_) return;
  std::lock_guard lock(m_);
  on_device(d, iterations, seconds, round_trip > seconds ? round_trip : seconds);
}

void LoopScheduler::restart(std::size_t iterations, double last_call_seconds) {
  std::lock_guard lock(m_);
  on_restart(iterations, last_call_seconds);
}

std::size_t round_up_64(std::size_t n, std::size_t cap) {
  const std::size_t up = n % 64 == 0 ? n : n + (64 - n % 64);
  return std::max<std::size_t>(1, std::min(up, cap));
}

namespace {
// The running mean of a side's throughput: chunks differ, and one slow chunk must not decide.
void blend(double& thr, double sample) { thr = thr <= 0 ? sample : 0.5 * thr + 0.5 * sample; }
}  // namespace

// ---- Static ----------------------------------------------------------------------------------

StaticScheduler::StaticScheduler(unsigned cpu_workers, std::vector<double> device_shares)
    : LoopScheduler(cpu_workers, unsigned(std::max<std::size_t>(1, device_shares.size()))) {
  set_shares(std::move(device_shares));
}

void StaticScheduler::set_shares(std::vector<double> shares) {
  shares.resize(devices_, 0.0);
  double sum = 0;
  for (double& s : shares) sum += (s = std::clamp(s, 0.0, 1.0));
  if (sum > 1)
    for (double& s : shares) s /= sum;
  shares_ = std::move(shares);
}

std::string StaticScheduler::name() const {
  std::string n = "static(";
  for (std::size_t d = 0; d < shares_.size(); ++d) {
    if (d) n += ',';
    n += std::to_string(shares_[d]);
  }
  return n + ")";
}

void StaticScheduler::on_restart(std::size_t iterations, double) {
  device_part_.assign(devices_, 0);
  given_.assign(devices_, false);
  std::size_t devices_total = 0;
  for (unsigned d = 0; d < devices_; ++d) {
    device_part_[d] = std::min(iterations - devices_total, std::size_t(std::llround(shares_[d] * double(iterations))));
    devices_total += device_part_[d];
  }
  const std::size_t cpu_part = iterations - devices_total;
  cpu_chunk_ = std::max<std::size_t>(1, (cpu_part + cpu_workers_ - 1) / cpu_workers_);
}

std::size_t StaticScheduler::next_device(unsigned d, std::size_t remaining, double) {
  if (given_.size() <= d || given_[d] || device_part_[d] == 0) return 0;
  given_[d] = true;
  return std::min(device_part_[d], remaining);
}

std::size_t StaticScheduler::next_cpu(std::size_t remaining, double) {
  // The devices' shares stay reserved until they have taken them.
  std::size_t reserved = 0;
  for (unsigned d = 0; d < device_part_.size(); ++d)
    if (!given_[d]) reserved += device_part_[d];
  if (remaining <= reserved) return 0;
  return std::min(cpu_chunk_, remaining - reserved);
}

// ---- Dynamic ---------------------------------------------------------------------------------

DynamicScheduler::DynamicScheduler(unsigned cpu_workers, unsigned devices, std::size_t chunk)
    : LoopScheduler(cpu_workers, devices), chunk_(std::max<std::size_t>(1, chunk)) {}

std::string DynamicScheduler::name() const { return "dynamic(" + std::to_string(chunk_) + ")"; }
std::size_t DynamicScheduler::next_cpu(std::size_t, double) { return chunk_; }
std::size_t DynamicScheduler::next_device(unsigned, std::size_t, double) { return chunk_; }

// ---- LogFit ----------------------------------------------------------------------------------

LogFitScheduler::LogFitScheduler(unsigned cpu_workers, unsigned devices, double elbow_gain)
    : LoopScheduler(cpu_workers, devices), elbow_gain_(elbow_gain), dev_(devices_) {}

std::string LogFitScheduler::name() const { return "logfit"; }

void LogFitScheduler::on_restart(std::size_t, double) {
  for (Device& dev : dev_) {
    dev.warm_up = true;
    dev.stopped = false;
    if (dev.phase == Phase::final) dev.phase = Phase::stable;  // the model holds across calls
  }
}

void LogFitScheduler::fit(Device& dev) {
  // Least squares of thr = a·ln(chunk) + b.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = double(dev.samples.size());
  for (const auto& s : dev.samples) {
    const double x = std::log(double(s.chunk));
    sx += x, sy += s.throughput, sxx += x * x, sxy += x * s.throughput;
  }
  const double var = n * sxx - sx * sx;
  if (dev.samples.size() < 2 || var <= 0) return;
  dev.a = (n * sxy - sx * sy) / var;
  dev.b = (sy - dev.a * sx) / n;
}

double LogFitScheduler::measured_device_throughput() const {
  double sum = 0;
  for (const Device& dev : dev_)
    if (!dev.stopped && dev.thr > 0) sum += dev.thr;
  return sum;
}

bool LogFitScheduler::final_phase_due(const Device& dev, std::size_t remaining) const {
  if (dev.phase != Phase::stable || cpu_thr_ <= 0 || dev.thr <= 0) return false;
  // Due when this device's next chunk would outlast everyone else finishing the rest.
  const double chunk = double(dev.stable_chunk), rem = double(remaining);
  const double others = double(cpu_workers_) * cpu_thr_ + measured_device_throughput() - dev.thr;
  return rem < chunk || chunk / dev.thr > (rem - chunk) / others;
}

std::size_t LogFitScheduler::next_device(unsigned d, std::size_t remaining, double) {
  Device& dev = dev_[d];
  if (dev.stopped) return 0;
  if (dev.warm_up) return 1;
  if (final_phase_due(dev, remaining)) dev.phase = Phase::final;
  switch (dev.phase) {
    case Phase::exploration:
      return dev.exploring_chunk;
    case Phase::stable:
      return round_up_64(dev.stable_chunk, remaining);
    case Phase::final:
      break;
  }
  // What is left, split so that every side ends together — or none of it here if the others
  // alone finish sooner, or all of it if this device alone does.
  const double rem = double(remaining), n_cpu = double(cpu_workers_) * cpu_thr_;
  const double all = n_cpu + measured_device_throughput();
  const double split = dev.thr * rem / all;
  const double t_split = rem / all, t_alone = rem / dev.thr, t_without = rem / (all - dev.thr);
  dev.stopped = true;  // its last chunk of this call
  if (t_without <= t_split) return 0;
  if (t_alone <= t_split) return remaining;
  return std::size_t(std::llround(split));
}

std::size_t LogFitScheduler::next_cpu(std::size_t remaining, double) {
  const double devices_thr = measured_device_throughput();
  unsigned running = 0;
  for (const Device& dev : dev_) running += !dev.stopped;
  if (cpu_thr_ <= 0 || (running > 0 && devices_thr <= 0)) {
    // Nothing measured yet: small probes, never more than a fair share.
    return std::max<std::size_t>(1, std::min<std::size_t>(64, remaining / (cpu_workers_ + running)));
  }
  if (running == 0) return std::max<std::size_t>(1, (remaining + cpu_workers_ - 1) / cpu_workers_);
  // A CPU chunk as long as the shortest device chunk in flight (002's gpu_chunk / f), and no
  // more than the share of the rest that keeps every side ending together.
  double device_seconds = 0;
  for (const Device& dev : dev_) {
    if (dev.stopped || dev.thr <= 0) continue;
    const double chunk = double(dev.phase == Phase::exploration ? dev.exploring_chunk : dev.stable_chunk);
    const double t = chunk / dev.thr;
    device_seconds = device_seconds > 0 ? std::min(device_seconds, t) : t;
  }
  const double fair = double(remaining) * cpu_thr_ / (double(cpu_workers_) * cpu_thr_ + devices_thr);
  const double chunk = std::max(1.0, std::min(device_seconds * cpu_thr_, fair));
  return round_up_64(std::size_t(chunk), remaining);
}

void LogFitScheduler::on_cpu(std::size_t iterations, double seconds) { blend(cpu_thr_, double(iterations) / seconds); }

void LogFitScheduler::on_device(unsigned d, std::size_t iterations, double seconds, double) {
  Device& dev = dev_[d];
  const double thr = double(iterations) / seconds;
  if (dev.warm_up) {  // the first chunk of a call pays start-up costs: not a sample
    dev.warm_up = false;
    return;
  }
  dev.thr = thr;
  if (dev.phase == Phase::exploration) {
    dev.samples.push_back({iterations, thr});
    const bool truncated = iterations < dev.exploring_chunk;
    dev.exploring_chunk *= 2;
    const std::size_t k = dev.samples.size();
    auto gain = [&](std::size_t i) {  // relative throughput gain per relative chunk growth
      const double growth = double(dev.samples[i].chunk) / double(dev.samples[i - 1].chunk) - 1.0;
      return growth > 0 ? (dev.samples[i].throughput / dev.samples[i - 1].throughput - 1.0) / growth : 0.0;
    };
    const bool elbow = k >= 4 && gain(k - 1) <= elbow_gain_ && gain(k - 2) <= elbow_gain_;
    if ((elbow || truncated) && k >= 2) {
      fit(dev);
      // The tangent point: the chunk where the fitted curve's slope falls to the elbow's.
      const std::size_t elbow_chunk = dev.samples[k - 2].chunk;
      dev.threshold = dev.a > 0 ? dev.a / double(elbow_chunk) : 0;
      dev.stable_chunk = dev.threshold > 0 ? std::size_t(dev.a / dev.threshold) : elbow_chunk;
      dev.phase = Phase::stable;
      dev.worse_in_a_row = 0;
    }
    return;
  }
  if (dev.phase != Phase::stable) return;
  const double predicted = dev.a * std::log(double(iterations)) + dev.b;
  if (thr >= 0.9 * predicted) {
    dev.worse_in_a_row = 0;
    // Replace the sample of its power-of-two interval and refit.
    auto bucket = [](std::size_t c) { return std::size_t(std::log2(double(c))); };
    auto it = std::find_if(dev.samples.begin(), dev.samples.end(),
                           [&](const Sample& s) { return bucket(s.chunk) == bucket(iterations); });
    if (it != dev.samples.end())
      *it = {iterations, thr};
    else
      dev.samples.push_back({iterations, thr});
    fit(dev);
    if (dev.threshold > 0 && dev.a > 0) dev.stable_chunk = std::size_t(dev.a / dev.threshold);
    return;
  }
  // Two chunks in a row well under the model: the device's behaviour changed; explore again.
  if (++dev.worse_in_a_row >= 2) {
    dev.samples.clear();
    dev.exploring_chunk = 1;
    dev.phase = Phase::exploration;
    dev.worse_in_a_row = 0;
  }
}

// ---- HGuided --------------------------------------------------------------------------------

HGuidedScheduler::HGuidedScheduler(unsigned cpu_workers, unsigned devices, double k, std::size_t min_chunk)
    : LoopScheduler(cpu_workers, devices),
      k_(k > 0 ? k : 2.0),
      min_chunk_(std::max<std::size_t>(1, min_chunk)),
      device_thr_(devices_, 0.0) {}

std::string HGuidedScheduler::name() const { return "hguided"; }

bool HGuidedScheduler::all_measured() const {
  return cpu_thr_ > 0 && std::all_of(device_thr_.begin(), device_thr_.end(), [](double t) { return t > 0; });
}

std::size_t HGuidedScheduler::package(std::size_t remaining, double power) const {
  const double total = double(cpu_workers_) * cpu_thr_ + std::accumulate(device_thr_.begin(), device_thr_.end(), 0.0);
  const double size = double(remaining) * power / (k_ * total);
  return std::min(remaining, std::max(min_chunk_, round_up_64(std::size_t(size), remaining)));
}

std::size_t HGuidedScheduler::next_cpu(std::size_t remaining, double) {
  // Unmeasured yet, a worker probes with a small package.
  if (!all_measured()) return std::min(remaining, min_chunk_);
  return package(remaining, cpu_thr_);
}

std::size_t HGuidedScheduler::next_device(unsigned d, std::size_t remaining, double) {
  // A device's throughput depends on the package (small ones leave it idle), so its probe is a
  // full-sized package as if it were one more worker: a small probe would make it look weak and
  // keep its packages small (in simulation: 0.60 of the ideal instead of 0.999).
  if (!all_measured()) {
    const double share = double(remaining) / (k_ * double(cpu_workers_ + devices_));
    return std::min(remaining, std::max(min_chunk_, round_up_64(std::size_t(share), remaining)));
  }
  return package(remaining, device_thr_[d]);
}

void HGuidedScheduler::on_cpu(std::size_t iterations, double seconds) { blend(cpu_thr_, double(iterations) / seconds); }

void HGuidedScheduler::on_device(unsigned d, std::size_t iterations, double seconds, double) {
  // A device's power is what it does with a package large enough to fill it: the best seen. A mean
  // would follow the shrinking packages down (a device runs small ones slowly), shrink its share,
  // and spiral (two devices in simulation: 0.66x one device's speed with a running mean).
  device_thr_[d] = std::max(device_thr_[d], double(iterations) / seconds);
}

// ---- Oracle ----------------------------------------------------------------------------------

OracleScheduler::OracleScheduler(unsigned cpu_workers, unsigned devices)
    : StaticScheduler(cpu_workers, std::vector<double>(devices ? devices : 1, 0.0)), device_thr_(devices_, 0.0) {
  for (int i = 0; i <= 10; ++i) candidates_.push_back(i / 10.0);
}

std::string OracleScheduler::name() const { return "oracle"; }

void OracleScheduler::on_device(unsigned d, std::size_t iterations, double seconds, double) {
  device_thr_[d] = double(iterations) / seconds;
}

void OracleScheduler::on_restart(std::size_t iterations, double last_call_seconds) {
  if (last_call_seconds > 0 && next_ > 0) {
    if (best_seconds_ <= 0 || last_call_seconds < best_seconds_)
      best_seconds_ = last_call_seconds, best_share_ = current_;
  }
  if (next_ == candidates_.size() && !refined_) {
    refined_ = true;  // the coarse grid is done: steps of 0.02 around its best
    for (int i = -4; i <= 4; ++i) {
      const double c = best_share_ + i * 0.02;
      if (i != 0 && c >= 0 && c <= 1) candidates_.push_back(c);
    }
  }
  current_ = next_ < candidates_.size() ? candidates_[next_++] : best_share_;
  // The devices' part, divided in proportion to what each did last (equally until measured).
  const double measured = std::accumulate(device_thr_.begin(), device_thr_.end(), 0.0);
  const bool every_device_measured =
      std::all_of(device_thr_.begin(), device_thr_.end(), [](double t) { return t > 0; });
  std::vector<double> shares(devices_);
  for (unsigned d = 0; d < devices_; ++d)
    shares[d] = current_ * (every_device_measured ? device_thr_[d] / measured : 1.0 / double(devices_));
  set_shares(std::move(shares));
  StaticScheduler::on_restart(iterations, last_call_seconds);
}

}  // namespace hetflow::detail
