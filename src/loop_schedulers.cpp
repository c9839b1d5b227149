#include "loop_schedulers.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace hetflow::detail {

void LoopScheduler::rest_is(std::size_t remaining) {
  call_n_ = std::max(call_n_, remaining);  // a caller that skipped restart()
  // Over all that is left, not over the range's tail where the CPU's last share lay: R-MAT's tail
  // rows are nearly empty, and a rate from them had 29 workers end 4M rows in 0.5 ms, so both GPUs
  // stopped at the call's start and the CPU took 44 ms (simulated SpMV over two GPUs).
  cpu_thr_ = cpu_cost_.rate(call_n_ - remaining, remaining);
  rest_ = remaining;
  rest_weight_ = remaining ? rest_work(remaining) / double(remaining) : 1.0;
}

std::size_t LoopScheduler::cpu_chunk(std::size_t remaining, double now) {
  if (remaining == 0) return 0;
  std::lock_guard lock(m_);
  rest_is(remaining);
  return std::min(with_devices_ ? next_cpu(remaining, now) : cpu_only_chunk(remaining), remaining);
}

std::size_t LoopScheduler::device_chunk(unsigned d, std::size_t remaining, double now, std::size_t* piece) {
  if (piece) *piece = 0;
  if (remaining == 0 || d >= devices_) return 0;
  std::lock_guard lock(m_);
  rest_is(remaining);
  piece_ = 0;
  const std::size_t chunk = std::min(next_device(d, remaining, now), remaining);
  if (piece && piece_ > 0 && piece_ < chunk) *piece = piece_;
  return chunk;
}

void LoopScheduler::record_cpu(std::size_t begin, std::size_t iterations, double seconds) {
  if (iterations == 0 || !(seconds > 0)) return;
  std::lock_guard lock(m_);
  cpu_cost_.record(begin, iterations, seconds);
  if (with_devices_) region_.record(devices_, begin, iterations, seconds);  // what the devices' work is measured by
}

void LoopScheduler::record_device(unsigned d, std::size_t begin, std::size_t iterations, double seconds,
                                  double round_trip) {
  if (iterations == 0 || !(seconds > 0) || d >= devices_) return;
  std::lock_guard lock(m_);
  on_device(d, begin, iterations, seconds, round_trip > seconds ? round_trip : seconds);
}

void LoopScheduler::record_transfer_back(unsigned d, std::size_t iterations, double seconds) {
  if (iterations == 0 || !(seconds > 0) || d >= devices_) return;
  std::lock_guard lock(m_);
  on_transfer_back(d, iterations, seconds);
}

void LoopScheduler::same_kind(const std::vector<unsigned>& kind_of_device) {
  std::lock_guard lock(m_);
  // RegionWork's groups: the devices' kinds, a device left out a kind of its own, the CPU another.
  std::vector<unsigned> group(devices_ + 1);
  unsigned next = 0;
  for (unsigned d = 0; d < devices_; ++d) {
    kind_[d] = d < kind_of_device.size() ? int(kind_of_device[d]) : -1;
    next = std::max(next, d < kind_of_device.size() ? kind_of_device[d] + 1 : 0u);
  }
  for (unsigned d = 0; d < devices_; ++d) group[d] = kind_[d] >= 0 ? unsigned(kind_[d]) : next++;
  group[devices_] = next;
  region_.same_speed(std::move(group));
}

std::string LoopScheduler::decisions() const {
  std::lock_guard lock(m_);
  return name() + ": " + describe();
}

void LoopScheduler::restart(std::size_t iterations, double last_call_seconds, bool with_cpu, bool with_devices) {
  std::lock_guard lock(m_);
  with_cpu_ = with_cpu;
  with_devices_ = with_devices;
  call_n_ = iterations;
  cpu_cost_.restart(iterations);
  region_.restart(iterations);
  on_restart(iterations, last_call_seconds);
}

std::size_t round_up_64(std::size_t n, std::size_t cap) {
  const std::size_t up = n % 64 == 0 ? n : n + (64 - n % 64);
  return std::max<std::size_t>(1, std::min(up, cap));
}

std::size_t round_planned(std::size_t n, std::size_t cap) {
  const std::size_t step = std::clamp<std::size_t>(std::bit_floor(std::max<std::size_t>(n / 64, 1)), 64, 4096);
  return std::max<std::size_t>(1, std::min((n + step / 2) / step * step, cap));
}

std::size_t probe_rounded(std::size_t n, std::size_t probe) {
  const std::size_t step = std::clamp<std::size_t>(std::bit_floor(std::max<std::size_t>(n / 64, 1)), 64, 4096);
  for (const std::size_t grain : {step, std::size_t(64)})
    if (n >= grain && n - n / grain * grain <= probe) return n / grain * grain;
  return n;
}

std::size_t round_up_coarse(std::size_t n) {
  const std::size_t step = std::max<std::size_t>(64, std::bit_floor(n) / 4);
  return (n + step - 1) / step * step;
}

namespace {
// The running mean of a side's throughput: chunks differ, and one slow chunk must not decide.
void blend(double& thr, double sample) { thr = thr <= 0 ? sample : 0.5 * thr + 0.5 * sample; }
}  // namespace

// ---- Static ----------------------------------------------------------------------------------

StaticScheduler::StaticScheduler(unsigned cpu_workers, std::vector<double> device_shares)
    : LoopScheduler(cpu_workers, unsigned(std::max<std::size_t>(1, device_shares.size()))), device_thr_(devices_, 0.0) {
  set_shares(std::move(device_shares));
}

StaticScheduler::StaticScheduler(unsigned cpu_workers, unsigned devices, double share)
    : LoopScheduler(cpu_workers, devices), by_power_(std::clamp(share, 0.0, 1.0)), device_thr_(devices_, 0.0) {
  split_by_power(by_power_);
}

void StaticScheduler::set_shares(std::vector<double> shares) {
  shares.resize(devices_, 0.0);
  double sum = 0;
  for (double& s : shares) sum += (s = std::clamp(s, 0.0, 1.0));
  if (sum > 1)
    for (double& s : shares) s /= sum;
  shares_ = std::move(shares);
}

void StaticScheduler::split_by_power(double share) {
  const double measured = std::accumulate(device_thr_.begin(), device_thr_.end(), 0.0);
  const bool every_device_measured =
      std::all_of(device_thr_.begin(), device_thr_.end(), [](double t) { return t > 0; });
  std::vector<double> shares(devices_);
  for (unsigned d = 0; d < devices_; ++d)
    shares[d] = share * (every_device_measured ? device_thr_[d] / measured : 1.0 / double(devices_));
  set_shares(std::move(shares));
}

std::string StaticScheduler::name() const {
  std::string n = "static(";
  for (std::size_t d = 0; d < shares_.size(); ++d) {
    if (d) n += ',';
    n += std::to_string(shares_[d]);
  }
  return n + (by_power_ >= 0 && devices_ > 1 ? ", split by the devices' throughput)" : ")");
}

void StaticScheduler::on_device(unsigned d, std::size_t, std::size_t iterations, double seconds, double) {
  device_thr_[d] = double(iterations) / seconds;
}

void StaticScheduler::on_restart(std::size_t iterations, double) {
  if (by_power_ >= 0) split_by_power(by_power_);
  std::vector<double> shares = shares_;
  if (!cpu_runs()) {  // nobody runs the CPU's part: the devices take it, in proportion
    const double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
    for (double& s : shares) s = sum > 0 ? s / sum : 1.0 / double(devices_);
  }
  device_part_.assign(devices_, 0);
  given_.assign(devices_, false);
  std::size_t devices_total = 0;
  for (unsigned d = 0; d < devices_; ++d) {
    device_part_[d] = std::min(iterations - devices_total, std::size_t(std::llround(shares[d] * double(iterations))));
    devices_total += device_part_[d];
  }
  // Rounding must leave nothing to nobody when the devices take it all.
  if (!cpu_runs() && devices_total < iterations) device_part_[devices_ - 1] += iterations - devices_total;
  const std::size_t cpu_part = iterations - std::min(iterations, devices_total);
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

namespace {
// A device chunk's cost outside its kernel (launch, transfers back, a late notice) stays under
// this share of its time: on the H200 that cost is 0.2-1 ms, 1-5 % of a whole loop, and the chunks'
// costs add up (5 % each made 3 chunks and 5 % in all where one chunk was 1 % in simulation).
constexpr double kChunkCostShare = 0.01;
// A share is launched in at most this many pieces to hide its transfer back: each more saves less
// (the last piece's 1/k of it) and is a smaller kernel.
constexpr double kMostPiecesForTheTransferBack = 8;
// The least part of the range the CPU, at the cheapest price it has seen, must be able to end in a
// lone device's share's time for LogFit to leave it a probe of the tail (LogFitScheduler::next_device).
constexpr double kLeastCpuLesson = 0.02;
// The least fraction of a share's predicted time that cutting it for its transfer back must save.
constexpr double kLeastCutGain = 0.05;
// A chunk fills a device when its throughput is at least this fraction of its largest sample's.
constexpr double kFull = 0.9;
// Exploration starts at this fraction of the first call's range: the doublings cover any range in
// about ten chunks, each a round trip, and start small enough to find an elbow below it.
constexpr std::size_t kExplorationStart = 1024;
}  // namespace

LogFitScheduler::LogFitScheduler(unsigned cpu_workers, unsigned devices, double elbow_gain)
    : LoopScheduler(cpu_workers, devices), elbow_gain_(elbow_gain), dev_(devices_) {}

std::string LogFitScheduler::name() const { return "logfit"; }

std::size_t LogFitScheduler::explore_from(std::size_t iterations) const {
  return std::max<std::size_t>(64, round_up_64(iterations / kExplorationStart, iterations));
}

void LogFitScheduler::on_restart(std::size_t iterations, double) {
  const bool after_a_call = n_ > 0;
  n_ = iterations;
  cpu_given_seconds_ = 0;
  cpu_quota_ = 0;
  cpu_probe_ = 0;
  cpu_refusals_ = 0;
  for (Device& dev : dev_) {
    // Two calls in a row whose chunks ran mostly under 0.7 of the model: the device's behaviour
    // changed; explore again, from an eighth of the stable chunk (not from the range's 1/1024:
    // that many small chunks cost a whole call). Judged per call, not on two chunks in a row
    // (002): in an irregular loop chunks differ by where they fall in the range (in simulation,
    // a range whose second half costs 3x the first sent the device exploring within a call and
    // made calls 2-13x the device alone with two slots).
    if (dev.phase != Phase::exploration && dev.judged_slow + dev.judged_good > 0)
      dev.worse_calls = dev.judged_slow > dev.judged_good ? dev.worse_calls + 1 : 0;
    dev.judged_good = dev.judged_slow = 0;
    // Never a lone device (no CPU body, no other device): it takes every iteration whatever its
    // speed, and exploring again only cost it a call of small chunks (PoCL, 1M iterations: a 1 ms
    // call took 51, each new chunk size a kernel build, after two calls slowed by the machine).
    if (dev.worse_calls >= 2 && !cpu_runs() && devices_ == 1) dev.worse_calls = 0;
    if (dev.worse_calls >= 2) {
      dev.samples.clear();
      dev.confirmed = false;
      // A power of two times 64, as the first exploration's sizes are: sizes seen before.
      dev.exploring_chunk = std::max<std::size_t>(64, std::bit_floor(dev.stable_chunk / 8));
      dev.phase = Phase::exploration;
      dev.worse_calls = 0;
    }
    // A device that sat a whole call out learned nothing in it: what made it sit out — often the
    // cost outside its kernel, blended from one notice that waited for a core — would hold for
    // good (simulated, two GPUs and one notice 18.5 ms late: every later call on the other GPU).
    // Halving that cost per call sat out brings it back to be measured again.
    if (after_a_call && !dev.ran_this_call && !dev.warm_up) dev.fixed *= 0.5, dev.first_fixed *= 0.5;
    dev.stopped = false;
    dev.handed_this_call = false;
    dev.ran_this_call = false;
    dev.in_flight.clear();  // a failed call's chunks are never recorded
    if (dev.exploring_chunk == 0) dev.exploring_chunk = explore_from(iterations);
    if (dev.phase == Phase::final) dev.phase = Phase::stable;  // the model holds across calls
  }
  rework_samples();
}

std::string LogFitScheduler::describe() const {
  static const char* const phases[] = {"exploring", "stable", "final"};
  std::string text;
  char line[200];
  for (unsigned d = 0; d < devices_; ++d) {
    const Device& dev = dev_[d];
    std::snprintf(line, sizeof line,
                  "device %u %s, %zu samples, elbow %zu, %.4g work/s, %.3f ms a chunk outside its kernel", d,
                  phases[int(dev.phase)], dev.samples.size(), dev.stable_chunk, dev.thr, dev.fixed * 1e3);
    text += line;
    if (dev.back > 0) {
      std::snprintf(line, sizeof line, ", %.3g us per iteration back", dev.back * 1e6);
      text += line;
    }
    text += "; ";
  }
  std::snprintf(line, sizeof line, "a CPU worker %.4g iterations/s on the rest; ", cpu_thr_);
  return text + line + LoopScheduler::describe();
}

void LogFitScheduler::rework_samples() {
  for (Device& dev : dev_) {
    for (Sample& x : dev.samples)
      if (x.seconds > 0 && x.begin < n_) x.throughput = work_of(x.begin, std::min(x.chunk, n_ - x.begin)) / x.seconds;
    // A sample's work where the range holds little of it is known only roughly: the bottom rows of
    // Mandelbrot hold 0.2 % of the work, and a thousandth of it misplaced made a sample there 86x
    // the device's speed, the plan's chunks "slow" against it, and the device explore again (in
    // simulation). A device is never faster on a smaller chunk: none is taken faster than the
    // largest, which holds the most work and is known best.
    if (irregular() && !dev.samples.empty())
      for (Sample& x : dev.samples) x.throughput = std::min(x.throughput, dev.samples.back().throughput);
    if (dev.samples.size() >= 2) fit(dev);
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

double LogFitScheduler::predicted(const Device& dev, std::size_t chunk) const {
  // Between the samples (kept in chunk order), not on the fitted curve: the plan adds up the
  // predicted times of a call's chunks, and a logarithm fitted to a curve that rises and then
  // stays flat was 20 % off in between (in simulation, 4 ms late by a call's 8th chunk).
  const auto& s = dev.samples;
  if (s.empty()) return dev.thr;
  // Below the smallest sample a chunk leaves more of the device idle: it takes as long.
  if (chunk <= s.front().chunk) return s.front().throughput * double(chunk) / double(s.front().chunk);
  if (chunk >= s.back().chunk) return s.back().throughput;
  const auto hi =
      std::lower_bound(s.begin(), s.end(), chunk, [](const Sample& x, std::size_t c) { return x.chunk < c; });
  const auto lo = hi - 1;
  const double w = std::log(double(chunk) / double(lo->chunk)) / std::log(double(hi->chunk) / double(lo->chunk));
  return lo->throughput + w * (hi->throughput - lo->throughput);
}

std::size_t LogFitScheduler::fills_from(const Device& dev) const {
  // Where the samples level off, below the elbow where the exploration found none: a device whose
  // exploration ran out of range before its samples levelled (its first chunks at R-MAT's heavy
  // front rows) took the largest but one for its elbow, half the range, and a share under twice
  // that was never cut for its transfer back (two H200s, SpMV 2^24: the front GPU's 7.1M rows came
  // back whole, 0.5 ms after its kernel, every call; the other GPU's share in 3 pieces).
  const auto& s = dev.samples;
  std::size_t least = dev.stable_chunk;
  for (auto it = s.rbegin(); it != s.rend() && it->throughput >= kFull * s.back().throughput; ++it)
    least = std::min(least, it->chunk);
  return least;
}

double LogFitScheduler::ends_within(const Device& dev, double seconds) const {
  // Between samples, linear in (time, chunk); past the largest, at its throughput; under the
  // smallest's time, nothing. At its saturated throughput for any time instead, a device the loop
  // does not fill was counted on for iterations it cannot end that soon: two such GPUs split 60/40
  // where halves end sooner (simulated, N-body 64K over two H100s: 3.2 ms against 2.9).
  if (!(seconds > 0)) return 0;
  const auto& s = dev.samples;
  if (s.empty()) return dev.thr * seconds;
  double most = 0, t_prev = 0, c_prev = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const double c = double(s[i].chunk), t = c / s[i].throughput;
    if (t <= seconds)
      most = std::max(most, c);
    else if (i > 0 && t_prev < seconds)
      most = std::max(most, c_prev + (c - c_prev) * (seconds - t_prev) / (t - t_prev));
    t_prev = t, c_prev = c;
  }
  if (t_prev <= seconds) most = std::max(most, c_prev + s.back().throughput * (seconds - t_prev));
  return most;
}

double LogFitScheduler::start_of_next(const Device& dev, double now) const {
  // A chunk handed out now ends its chunk's kernel time after this: the launch and the notice
  // when the device is free, or its kernel follows the last one queued. The call's first chunk
  // also waits for the call's reads to go over.
  const double fixed = dev.handed_this_call ? dev.fixed : dev.first_fixed;
  double start = now + (fixed > 0 ? fixed : dev.handed_this_call ? dev.first_fixed : dev.fixed);
  if (!dev.in_flight.empty()) start = std::max(start, dev.in_flight.back().done);
  return start;
}

std::size_t LogFitScheduler::exploring_cut(unsigned d, std::size_t chunk, std::size_t remaining, double start,
                                           double now) const {
  // Against the others' end of what the sample leaves them, not of all that is left: that bound
  // let a device whose samples had not levelled off take the whole range (simulated, two GPUs:
  // every other call on one of them, 4.2 ms where the split takes 2.9).
  const Device& dev = dev_[d];
  // Alone (no CPU body, no other device running), it has nobody to end with: cut, it left the
  // range's last iteration over for a chunk of its own, a round trip more.
  if (!others_take_part(d)) return chunk;
  const double rest = rest_work(remaining);
  auto ends_with_others = [&](std::size_t c) {
    const double work = front_work(remaining, c), others_end = end_together(now, rest - work, int(d));
    return !std::isfinite(others_end) || start + work / predicted(dev, c) <= others_end;
  };
  std::size_t lo = std::min<std::size_t>(64, chunk), hi = chunk;
  if (!ends_with_others(lo)) return 0;
  if (ends_with_others(hi)) return hi;
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (ends_with_others(mid) ? lo : hi) = mid;
  }
  return lo;
}

bool LogFitScheduler::others_take_part(unsigned d) const {
  if (cpu_runs()) return true;
  for (unsigned e = 0; e < devices_; ++e)
    if (e != d && !dev_[e].stopped) return true;
  return false;
}

double LogFitScheduler::cpu_free(double now) const {
  // The CPU's workers have been busy since the call began (its chunks are sized so).
  return std::max(now, cpu_given_seconds_ / double(cpu_workers_));
}

double LogFitScheduler::end_together(double now, double work, int except) const {
  const double cpu_start = cpu_free(now);
  double committed = cpu_start;  // nobody ends before what it already has
  for (unsigned d = 0; d < devices_; ++d)
    if (int(d) != except && !dev_[d].in_flight.empty()) committed = std::max(committed, dev_[d].in_flight.back().done);
  if (work <= 0) return committed;
  auto capacity = [&](double t) {  // iterations the sides can still take and end by t
    // Whole iterations per worker: 29 workers a third of a Mandelbrot row each by then is no row
    // ended, and the devices, planning on them, left rows to a CPU that could end none in time.
    double c = double(cpu_workers_) * std::floor(cpu_thr_ * std::max(0.0, t - cpu_start)) * rest_weight_;
    for (unsigned d = 0; d < devices_; ++d) {
      const Device& dev = dev_[d];
      if (int(d) != except && !dev.stopped && planned(dev)) c += ends_within(dev, t - start_of_next(dev, now));
    }
    return c;
  };
  double lo = now, hi = now + 1e-3;
  for (int i = 0; capacity(hi) < work; ++i) {
    if (i == 200) return std::numeric_limits<double>::infinity();  // nobody can take it
    hi = now + 2 * (hi - now);
  }
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (capacity(mid) < work ? lo : hi) = mid;
  }
  return std::max(hi, committed);
}

std::size_t LogFitScheduler::next_device(unsigned d, std::size_t remaining, double now) {
  Device& dev = dev_[d];
  if (dev.stopped) return 0;
  const bool first = !dev.handed_this_call;
  const double start = start_of_next(dev, now);
  // Marked once this decision is made: while it plans, its own start is the call's first chunk's
  // (marked before, its plan counted itself free only after a later chunk's cost — once 18.6 ms
  // from a late notice — and left itself nearly all of the range, in simulation).
  struct MarkHanded {
    bool& handed;
    ~MarkHanded() { handed = true; }
  } mark{dev.handed_this_call};
  // Without a CPU body there is no CPU to wait for: the devices plan among themselves (waiting
  // for a CPU rate kept both on stable chunks, the slow one holding the end: simulated, 47.3 ms
  // where the fast device alone takes 19).
  if (dev.phase == Phase::exploration || (cpu_runs() && cpu_thr_ <= 0)) {
    // Exploring (or the CPU not measured yet, so nothing to plan against): the next size due,
    // advanced now so that chunks in flight at once are samples of different sizes — but not past
    // the warm-up chunk, which is no sample.
    std::size_t chunk = dev.phase == Phase::exploration ? dev.exploring_chunk : dev.stable_chunk;
    chunk = std::max<std::size_t>(1, std::min(chunk, remaining));
    // A chunk cut under the size due ends the exploration where larger samples would not matter:
    // the call's range is smaller, or the cut one is already a fair part of a device's share. A
    // sliver another device left says nothing of this one (a GPU left 320 iterations by the other
    // was planned on that sample, judged 77x slower and never used again, in simulation).
    const bool truncated = dev.phase == Phase::exploration && chunk < dev.exploring_chunk &&
                           (n_ < dev.exploring_chunk || 4 * std::size_t(devices_) * chunk >= n_);
    if (dev.phase == Phase::exploration && !dev.samples.empty()) {
      // A device explored while others are planned (a second device, slower) must not hold the
      // call's end with a sample: its chunk is cut to what ends by the time the others would end
      // the rest (predicted from its samples; past the largest at its throughput, which larger
      // chunks only beat), and if even a small one would not, it sits this call out (simulated, a device 10x slower
      // exploring 262K iterations held an SpMV-like call to 1.7x the fast device alone). A cut
      // sample does not end the exploration: ended there, a device whose chunks all took its
      // floor was judged by its smallest and never used.
      const std::size_t fits = exploring_cut(d, chunk, remaining, start, now);
      if (fits == 0) {
        dev.stopped = true;
        return 0;
      }
      chunk = fits;
    }
    if (dev.phase == Phase::exploration && !(dev.warm_up && dev.in_flight.empty())) dev.exploring_chunk *= 2;
    const double done = start + (dev.thr > 0 ? front_work(remaining, chunk) / predicted(dev, chunk) : 0);
    dev.in_flight.push_back({chunk, done, dev.in_flight.empty(), first, truncated, dev.phase == Phase::exploration});
    dev.ran_this_call = true;
    return chunk;
  }
  // Planned: how much of the rest this device takes now, judged by when the whole call would end.
  // What another device still exploring is due to take is left to it: the plan does not count it
  // (its throughput on the chunks it will take is not known yet), and a plan that took the whole
  // rest left it nothing to sample (simulated: a device 10x slower never used, call after call).
  double reserved = 0;
  for (unsigned e = 0; e < devices_; ++e) {
    const Device& other = dev_[e];
    if (e == d || other.stopped || other.phase != Phase::exploration || other.warm_up) continue;
    // What it will be given when it asks, as it will cut it (a larger reserve left a single
    // iteration over, which this device came back for: a round trip and a kernel's floor, 2 ms).
    reserved += double(other.samples.empty() ? other.exploring_chunk
                                             : exploring_cut(e, std::min(other.exploring_chunk, remaining), remaining,
                                                             start_of_next(other, now), now));
  }
  // In work from here on (RegionWork): the rest's, and what this device would take of it.
  const double rem = std::max(1.0, rest_work(remaining) - reserved * rest_weight_), thr = predicted(dev, n_);
  const double own_end = dev.in_flight.empty() ? now : dev.in_flight.back().done;
  auto end_if = [&](double x) {  // the call's end if this device takes x now and the others the rest
    const double mine = x > 0 ? start + x / predicted(dev, front_within(remaining, x, true)) : own_end;
    const double rest = rem - x;
    // The others' last chunks are whole iterations: one more iteration on one CPU worker — where
    // the CPU takes part in the rest at all. Where it cannot end one iteration by then (a Mandelbrot
    // row through the set: 26 ms on one core, where two GPUs end the call in 2.2), the others are
    // devices, and charging them a CPU iteration (20 ms) made every split lose to one GPU taking all.
    const double together = end_together(now, rest, int(d));
    const bool cpu_takes_part = rest > 0 && cpu_thr_ > 0 && cpu_thr_ * (together - cpu_free(now)) >= 1;
    const double others = together + (cpu_takes_part ? 1 / cpu_thr_ : 0);
    return std::max(mine, others);
  };
  const double balanced = std::clamp(ends_within(dev, end_together(now, rem) - start), 0.0, rem);
  double x = rem, best = end_if(rem);  // everything: no CPU chunk can end later than the device
  // Leaving the others a share pays only if it gains more than one more chunk of this device
  // costs (its cost outside the kernel and a small kernel's time): should they fall short by a
  // single iteration, the device comes back for it (simulated, Barnes-Hut's uneven costs on one
  // GPU and 31 workers: 2 chunks a call and 24.3 ms where the device alone took 23.1). Only where
  // the others are the CPU alone: with another device running, the same share left to the CPU
  // was needed by it (a slow second device charged so was never used).
  bool other_devices = false;
  for (unsigned e = 0; e < devices_; ++e) other_devices = other_devices || (e != d && !dev_[e].stopped);
  const double follow_up =
      other_devices || !cpu_runs() ? 0.0 : std::max(0.0, dev.fixed) + 64.0 / std::max(1.0, predicted(dev, 64));
  for (double candidate : {std::round(balanced), 0.0}) {
    const double e = end_if(candidate) + (candidate > 0 && candidate < rem ? follow_up : 0.0);
    if (e < best) best = e, x = candidate;
  }
  // The CPU's price for a part of the range it never ran is a guess (its profile doubles the
  // nearest known price per bin towards the front, or takes its costliest region's where it knows no
  // tail), and a share worth a follow-up at such prices is rarely planned, so it would never learn
  // otherwise (one H100, SpMV 2^22: R-MAT's tail rows looked as costly as the first ones, ~10,000x;
  // the GPU took every row, 2.2 ms a call, where the CPU taking the last 12 % made it 2.0). The
  // call's first share of a lone device leaves the CPU at least what its workers end in half the
  // share's time at those prices, one iteration each at least: that ends before the device's share
  // with time to spare (the guesses overprice), needs no follow-up, and what it took is next call's
  // prices. Beside other devices the CPU's share is the smallest, and its profile does not guess
  // (CpuCostProfile): there the CPU's chunks' own cost outweighed what it saved (simulated). Only
  // where the lesson could matter: the workers, at the cheapest price they ever ran, would end at
  // least 2 % of the range in the share's time. N-body's CPU, 350x slower than the H200 and alike
  // everywhere, has nothing to learn, and its probe's few iterations a worker, started after the
  // device's chunk, ended after it (2026-11-28: 1.5 ms a call where the device alone takes 1.1).
  std::size_t x_iterations = front_within(remaining, x, true);
  const double share_seconds = x / std::max(1e-12, predicted(dev, std::max<std::size_t>(1, x_iterations)));
  const bool worth_learning = cpu_cheapest() > 0 && double(cpu_workers_) * share_seconds / cpu_cheapest() >=
                                                        kLeastCpuLesson * double(remaining);
  if (first && !other_devices && cpu_runs() && cpu_thr_ > 0 && x_iterations > 0 && worth_learning) {
    const std::size_t probe =
        std::max<std::size_t>(cpu_workers_, cpu_tail_within(0.5 * double(cpu_workers_) * share_seconds));
    if (remaining > 2 * probe && x_iterations > remaining - probe) {
      x_iterations = remaining - probe;
      x = front_work(remaining, x_iterations);
      cpu_probe_ = probe;
    }
  }
  // Nothing, or less than one iteration's work where the range is regular: the others end sooner
  // without it, and its token stops for this call.
  if (x_iterations == 0 || (x < 1 && !irregular())) {
    dev.stopped = true;
    return 0;
  }
  // Its share in as few chunks as the elbow and the chunk's fixed cost allow: several give the
  // plan a chance to correct itself and overlap a chunk's transfer back with the next kernel, each
  // costs a round trip (none for a chunk queued behind another: it pays no launch, no notice).
  // A queued chunk's kernel should still outlast a round trip, or the queue runs dry (in
  // simulation, an elbow misjudged at 2K iterations cut a call into hundreds of chunks).
  const double fixed =
      dev.in_flight.empty() ? dev.fixed * (1 / kChunkCostShare - 1) : std::max(dev.fixed, dev.first_fixed);
  // At least the elbow (in iterations: it is how many fill the device) and long enough for its fixed
  // cost (in work).
  double chunks = std::max(1.0, std::floor(std::min(double(x_iterations) / std::max(1.0, double(dev.stable_chunk)),
                                                    x / std::max(1.0, thr * fixed))));
  // A chunk's results come back while the device's next kernel runs (its token goes on at its
  // kernels' end), but its last chunk's transfer back overlaps nothing of its own: a share in one
  // chunk whose transfer back is long is launched in the k pieces whose kernels (each at its size's
  // throughput, each filling the device: fills_from) and 1/k of that transfer end soonest, one after another on the
  // device's queue, each piece's results coming back while the next one's kernels run. Handed out
  // whole, as one chunk: cut into chunks handed out one at a time (until 2026-11-28), each cost a
  // round trip, and the CPU workers asking in between found the rest's front in the device's share,
  // so a share left the CPU nothing where it was cut (Mandelbrot 4096² on one H200: the cut or the
  // CPU's bottom rows, 3.5 or 3.9 ms a call, never both).
  std::size_t pieces = 1;
  if (dev.back > 0 && dev.in_flight.empty() && chunks <= 1) {
    const double back = dev.back * double(x_iterations);
    auto end = [&](double k) {
      const auto piece = std::max<std::size_t>(1, std::size_t(double(x_iterations) / k));
      return x / std::max(1e-12, predicted(dev, piece)) + back / k;
    };
    const double most = std::min(kMostPiecesForTheTransferBack,
                                 std::floor(double(x_iterations) / std::max(1.0, double(fills_from(dev)))));
    double soonest = end(1), cut = 1;
    for (double k = 2; k <= most; ++k)
      if (const double e = end(k); e < soonest) soonest = e, cut = k;
    // Only for a gain worth the risk: pieces that save a few percent on a model's noise are new
    // work-group sizes that PoCL builds a kernel for (a lone device, 1M iterations: cut into 5 for 2
    // % predicted, that call took 136 ms where one chunk takes 1).
    if (soonest <= (1 - kLeastCutGain) * end(1)) pieces = std::size_t(cut);
  }
  dev.phase = chunks <= 1 ? Phase::final : Phase::stable;
  // Beside the CPU only, rounded so that shares a few iterations apart are one size (the CPU takes
  // what that leaves); beside other devices, to 64 only: a coarser grain upset their balance (two
  // GPUs the loop does not fill, simulated: one took every call). All that is left stays all of it:
  // rounded, a lone device left itself a tail of a few hundred iterations, a chunk more each call.
  const std::size_t share = front_within(remaining, x / chunks, true);
  std::size_t chunk = share >= remaining ? remaining
                      : other_devices    ? round_up_64(share, remaining)
                                         : round_planned(share, remaining);
  // Alone, its pieces end with nobody's: their sizes come from a coarse set (four per octave), so
  // that the next call repeats them instead of sizes a few iterations apart. A driver that builds
  // a kernel for each new work-group size (PoCL: 50 ms a size, its local size chosen from the
  // global one) then builds them once; a lone device's 1M-iteration loop paid that every few calls.
  if (chunks > 1 && !others_take_part(d)) chunk = std::min(remaining, round_up_coarse(chunk));
  // The probe stays the CPU's while a worker may still come for it: rounded to the nearest grain, a
  // share took it back (Mandelbrot 4096² on one H200: the 15-57 rows left of 4096 rounded to all of
  // them, call after call, and the CPU never ran the bottom rows its profile priced as the costliest
  // it had seen). Only for a share in one chunk (launched whole or in pieces): a share in several
  // chunks is handed out a chunk at a time, and the workers asking in between take the rest's
  // front, in the device's share (with two device slots, simulated Barnes-Hut: their chunks there
  // and the probe after them, 26 ms where the device alone takes 19).
  if (chunks > 1) cpu_probe_ = 0;
  if (cpu_probe_ > 0 && cpu_refusals_ < cpu_workers_) {
    if (remaining <= cpu_probe_) {
      dev.stopped = true;
      return 0;
    }
    const bool capped = chunk + cpu_probe_ > remaining;
    if (capped) chunk = probe_rounded(remaining - cpu_probe_, cpu_probe_);
    // What the share's rounding leaves is the probe too: refused at the profile's prices, it cost
    // the device one more chunk for a few iterations.
    if (capped || first) cpu_probe_ = remaining - chunk;
  }
  if (pieces > 1) {
    // Sizes that repeat call after call (PoCL builds a kernel per work-group size): from the coarse
    // set for a lone device, else multiples of 64; the last piece is what is left.
    const std::size_t even = (chunk + pieces - 1) / pieces;
    piece_ = others_take_part(d) ? round_up_64(even, chunk) : std::min(chunk, round_up_coarse(even));
  }
  dev.in_flight.push_back({chunk, start + front_work(remaining, chunk) / predicted(dev, chunk), dev.in_flight.empty(),
                           first, false, false});
  dev.ran_this_call = true;
  return chunk;
}

std::size_t LogFitScheduler::next_cpu(std::size_t remaining, double now) {
  unsigned running = 0;
  bool exploring = false;
  double devices_thr = 0;
  for (const Device& dev : dev_) {
    if (dev.stopped) continue;
    ++running;
    devices_thr += dev.thr;
    exploring = exploring || !planned(dev);
  }
  std::size_t chunk = 0;
  if (cpu_probe_ > 0 && remaining <= cpu_probe_) {
    // The probe a lone device's share left: each worker runs an even part of its cost at the
    // profile's prices, whether or not those say it ends in time (refused at guessed prices, the
    // CPU never ran the tail and never learned them). Even in cost, not in count: R-MAT's rows
    // differ a thousandfold, and a count's even parts held simulated SpMV calls to twice the best split.
    // One iteration over the quota: rounded down, N-body's 64 left 15 workers 4 over, and a second
    // chunk each for 4 of them (simulated, the call 1.66 ms where the device alone takes 1.3).
    // At the likely prices, not the cautious ones (CpuCostProfile::Pricing).
    constexpr auto likely = CpuCostProfile::Pricing::likely;
    if (cpu_quota_ <= 0) cpu_quota_ = cpu_seconds(remaining, remaining, likely) / double(cpu_workers_);
    chunk = std::min(remaining, cpu_within(remaining, cpu_quota_ * 1.0001, likely) + 1);
  } else if (cpu_thr_ <= 0 || (running > 0 && devices_thr <= 0)) {
    // Nothing measured yet: small probes, never more than a fair share. Once the CPU is measured,
    // a device that has said nothing for `now` seconds takes at least that long, so a chunk may
    // last a tenth of it (a tenth: what a worker holds of the call's end stays small, and in
    // simulation half changed what the first call taught the CPU's profile, SpMV's calls 20 %
    // slower after): probes of 64 while PoCL built a kernel with a cold cache (seconds) made 15,599
    // CPU chunks of one call, each paying a hook's submission (tester 8's 1M iterations on the
    // default device).
    const std::size_t fair = remaining / (cpu_workers_ + running);
    chunk = std::max<std::size_t>(1, std::min<std::size_t>(64, fair));
    if (cpu_thr_ > 0) chunk = std::max(chunk, std::min(fair, cpu_within(remaining, 0.1 * now)));
  } else if (exploring) {
    // 002's rule while a device explores: a CPU chunk as long as the shortest device chunk in
    // flight (gpu_chunk / f), and no more than this worker runs before the planned sides would end
    // all the rest together. That plan knows when each device is free: a share by throughputs
    // alone counted a device busy with 99 % of the call as taking the rest too, and cut the CPU's
    // part to chunks of 4 iterations (in simulation, 2,512 chunks and the call 3 % late).
    double device_seconds = 0;
    for (const Device& dev : dev_) {
      if (dev.stopped || dev.thr <= 0) continue;
      const std::size_t c = dev.in_flight.empty() ? dev.exploring_chunk : dev.in_flight.back().chunk;
      const double t = double(c) * rest_weight_ / dev.thr;
      device_seconds = device_seconds > 0 ? std::min(device_seconds, t) : t;
    }
    const double until = end_together(now, rest_work(remaining)) - now;
    const std::size_t share = std::isfinite(until) ? cpu_within(remaining, until) : remaining;
    chunk = std::min(cpu_within(remaining, device_seconds), share);
  } else {
    // Planned: half of what this worker can run before every side would end together — so no CPU
    // chunk ends after the device's last one, and the CPU takes only what it finishes by then
    // (on a device 100x the CPU that is little) — or, once the CPU can finish all that is left
    // by then, an even share of it (halving on would leave a tail of one-iteration chunks). Not
    // rounded to 64: one CPU iteration of Barnes-Hut takes 34 us, 64 of them a tenth of the
    // whole loop on the H200. Measured in the time the iterations at the front of the rest take
    // (CpuCostProfile), not in a mean count: Barnes-Hut's cost differs tenfold by region.
    // Where the rest's front lies before the part of the range the CPU has run, its price there is
    // the profile's guess, which an R-MAT matrix's rows beat up to 2.7x (a row at each power of two
    // holds most of its block's non-zeros): its chunks are sized on half the time left there, so
    // one priced short still ends in time (simulated SpMV on one GPU: one such chunk held a call to
    // 2x the GPU's end).
    const double until = end_together(now, rest_work(remaining)) - now;
    const double sure = remaining > cpu_known_tail() ? 0.5 : 1.0;
    // Once the whole rest ends in time spread over the workers, each takes an even part of its
    // cost in one chunk: R-MAT's tail taken in shrinking chunks made 158 a call on one H100 and the
    // call 2.5 ms, where one chunk per worker of the same rows took 2.0.
    const double rest_seconds = cpu_seconds(remaining, remaining);
    if (cpu_quota_ <= 0 && rest_seconds <= double(cpu_workers_) * sure * until)
      cpu_quota_ = rest_seconds / double(cpu_workers_);
    if (cpu_quota_ > 0) {
      // A hair over the quota: rounded down, the last worker's part left a few iterations over.
      chunk = std::max<std::size_t>(1, cpu_within(remaining, cpu_quota_ * 1.0001));
    } else {
      const std::size_t by_then = cpu_within(remaining, sure * until);
      const std::size_t even = (remaining + cpu_workers_ - 1) / cpu_workers_;
      chunk = remaining <= std::size_t(cpu_workers_) * by_then ? std::min(even, by_then)
                                                               : cpu_within(remaining, 0.5 * sure * until);
    }
  }
  // Not even one iteration ends in time: this worker stops for the call. One iteration handed out
  // anyway was a whole Mandelbrot row through the set, 26 ms on one core, where two GPUs end the
  // call in 2.5 (simulated: 29 workers a row each, the call 30 ms).
  if (chunk == 0) {
    ++cpu_refusals_;
    return 0;
  }
  chunk = std::min(chunk, remaining);
  cpu_given_seconds_ += cpu_thr_ > 0 ? cpu_seconds(remaining, chunk) : 0.0;
  return chunk;
}

void LogFitScheduler::on_transfer_back(unsigned d, std::size_t iterations, double seconds) {
  // Per iteration from the largest chunks only: a transfer's fixed part divided by a small chunk's
  // iterations made its results look costly to bring back (PoCL, 60K iterations: 0.089 us each
  // from the 64-iteration samples, ten times the whole range's), and the next call was cut into
  // five chunks of new sizes to overlap a transfer that was not there, each size a new kernel
  // build for PoCL (50 ms apiece).
  Device& dev = dev_[d];
  if (2 * iterations < dev.back_from) return;
  if (iterations > 2 * dev.back_from) dev.back = 0;  // the smaller ones' estimate is dropped
  blend(dev.back, seconds / double(iterations));
  dev.back_from = std::max(dev.back_from, iterations);
}

void LogFitScheduler::on_device(unsigned d, std::size_t begin, std::size_t iterations, double seconds,
                                double round_trip) {
  Device& dev = dev_[d];
  InFlight chunk{iterations, 0, false, true, false, true};
  if (!dev.in_flight.empty()) {
    chunk = dev.in_flight.front();
    dev.in_flight.erase(dev.in_flight.begin());
  }
  // A planned chunk fills the device: its time says what its part of the range costs, slow or not
  // (a chunk through Mandelbrot's set is slow for where it lies, and that is what is learned).
  // An exploring chunk may not fill it, unless it is as large as the elbow of a device of its kind.
  std::size_t filled_from = 0;
  for (unsigned e = 0; e < devices_; ++e)
    if (same_kind(d, e) && planned(dev_[e]) && dev_[e].stable_chunk > 0)
      filled_from = filled_from ? std::min(filled_from, dev_[e].stable_chunk) : dev_[e].stable_chunk;
  learn_region(d, begin, iterations, seconds,
               !dev.warm_up && (!chunk.exploring || (filled_from > 0 && iterations >= filled_from)));
  if (dev.warm_up) {  // the loop's first chunk pays start-up costs (compilation, first touch)
    dev.warm_up = false;
    return;
  }
  const double thr = work_of(begin, iterations) / seconds;
  // What the device spent on the chunk outside its kernel, when nothing else of it was in flight
  // (a queued chunk's round trip holds the wait for the one before): the call's first chunk apart,
  // as it also waited for the call's reads to go over.
  if (chunk.alone && round_trip > seconds) blend(chunk.first ? dev.first_fixed : dev.fixed, round_trip - seconds);
  // A later chunk costs no more outside its kernel than the call's first, which also waits for the
  // reads: a device given one chunk a call never measures a later one again, and a late notice
  // blended into that cost would stay (simulated: 18.6 ms, kept for good).
  if (chunk.first && dev.fixed > dev.first_fixed && dev.first_fixed > 0) dev.fixed = dev.first_fixed;
  // A sliver an exploring device got because the range ran out under the smallest exploring size
  // says nothing of larger chunks, which predicted() would take to run at its throughput: one
  // iteration in a GPU's 1.5 ms floor kept that GPU out of every later call (simulated).
  if (dev.phase == Phase::exploration && iterations < std::min<std::size_t>(64, dev.exploring_chunk) &&
      !chunk.truncated)
    return;
  dev.thr = thr;
  if (dev.phase == Phase::exploration) {
    // Kept in chunk order (predicted() interpolates them so): a chunk cut short — the range ran
    // out, or it was cut to end with the others — goes where its size puts it, and only a sample
    // larger than all before it is judged for the elbow. Appended last, a cut one made a GPU look
    // 7x slower on the whole range (simulated, two GPUs: the other took every later call).
    const auto at =
        std::find_if(dev.samples.begin(), dev.samples.end(), [&](const Sample& x) { return x.chunk >= iterations; });
    const bool largest = at == dev.samples.end();
    if (!largest && at->chunk == iterations)
      *at = {iterations, thr, begin, seconds};
    else
      dev.samples.insert(at, {iterations, thr, begin, seconds});
    const std::size_t k = dev.samples.size();
    auto gain = [&](std::size_t i) {  // relative throughput gain per relative chunk growth
      const double growth = double(dev.samples[i].chunk) / double(dev.samples[i - 1].chunk) - 1.0;
      return growth > 0 ? (dev.samples[i].throughput / dev.samples[i - 1].throughput - 1.0) / growth : 0.0;
    };
    const bool elbow = largest && k >= 4 && gain(k - 1) <= elbow_gain_ && gain(k - 2) <= elbow_gain_;
    // A chunk that took no longer than half its size did is far under the elbow: grow by 8, not
    // 2. Each sample is a round trip at least as long as the device's floor; on a slow device
    // that floor can be most of a call (simulated, 12 ms of 19), and doubling from 1/1024 of the
    // range took a call per sample for seven calls.
    if (largest && k >= 2 && gain(k - 1) >= 0.9) dev.exploring_chunk = std::max(dev.exploring_chunk, 8 * iterations);
    if ((elbow || chunk.truncated) && k >= 2) {
      fit(dev);
      // The tangent point: the chunk where the fitted curve's slope falls to the elbow's.
      const std::size_t elbow_chunk = dev.samples[k - 2].chunk;
      dev.threshold = dev.a > 0 ? dev.a / double(elbow_chunk) : 0;
      dev.stable_chunk = dev.threshold > 0 ? std::size_t(dev.a / dev.threshold) : elbow_chunk;
      dev.phase = Phase::stable;
    }
    return;
  }
  // Chunks under the elbow are slow by nature (the device is not full) and the fit is rough
  // there: they say nothing of a change.
  if (iterations < dev.stable_chunk) return;
  // Slow means well under the model: an irregular loop's chunks differ by where they fall in the
  // range (Barnes-Hut's halves by 25 %, more at smaller chunks), and at 0.9 of the model such chunks
  // sent a GPU back to exploring every few calls, each time for a call at one GPU's speed
  // (simulated, two GPUs). Chunks within that are learned from.
  // The first planned chunk after an exploration is learned from, not judged: the exploration's
  // samples lie at the range's front, and what they say of work elsewhere rests on a work-by-region
  // model that has not learned the loop yet. Over two GPUs and Mandelbrot's cheap top rows they
  // predicted 6.9x what the halves then ran at: both GPUs were judged slow every call and sent back
  // to exploring in turn, a call at one GPU's time each (simulated).
  const bool learn = !dev.confirmed;
  if (learn || thr >= 0.7 * predicted(dev, iterations)) {
    if (!learn) ++dev.judged_good;
    dev.confirmed = true;
    // Replace the sample of its power-of-two interval and refit; the samples stay in chunk order.
    auto bucket = [](std::size_t c) { return std::size_t(std::log2(double(c))); };
    auto it = std::find_if(dev.samples.begin(), dev.samples.end(),
                           [&](const Sample& s) { return bucket(s.chunk) >= bucket(iterations); });
    if (it != dev.samples.end() && bucket(it->chunk) == bucket(iterations)) {
      dev.samples.erase(it);
      it = std::find_if(dev.samples.begin(), dev.samples.end(), [&](const Sample& s) { return s.chunk > iterations; });
    }
    dev.samples.insert(it, {iterations, thr, begin, seconds});
    fit(dev);
    if (dev.threshold > 0 && dev.a > 0) dev.stable_chunk = std::size_t(dev.a / dev.threshold);
    return;
  }
  ++dev.judged_slow;  // on_restart() decides whether the device changed
}

// ---- HGuided --------------------------------------------------------------------------------

HGuidedScheduler::HGuidedScheduler(unsigned cpu_workers, unsigned devices, double k, std::size_t min_chunk)
    : LoopScheduler(cpu_workers, devices),
      k_(k > 0 ? k : 2.0),
      min_chunk_(std::max<std::size_t>(1, min_chunk)),
      dev_(devices_) {}

std::string HGuidedScheduler::name() const { return "hguided"; }

void HGuidedScheduler::on_restart(std::size_t, double) {
  for (Device& dev : dev_) dev.stopped = false, dev.busy_until = 0;
}

bool HGuidedScheduler::all_measured() const {
  // Without a CPU body no CPU chunk is ever timed: waiting for one kept every device on its probe
  // size for the whole call, the slow one as large as the fast one (simulated, devices only:
  // 96.5 ms where the fast device alone took 77.7).
  return (!cpu_runs() || cpu_thr_ > 0) &&
         std::all_of(dev_.begin(), dev_.end(), [](const Device& d) { return d.power > 0; });
}

double HGuidedScheduler::total_power() const {
  double total = cpu_runs() ? double(cpu_workers_) * cpu_thr_ : 0.0;
  for (const Device& dev : dev_)
    if (!dev.stopped) total += dev.power;
  return total;
}

double HGuidedScheduler::device_seconds(const Device& dev, double p) const {
  return std::max(p / dev.power, dev.floor) + std::max(0.0, dev.fixed);
}

double HGuidedScheduler::others_end(double now, double work, const Device* except, bool except_worker) const {
  // When the sides but one would end `work` more iterations: each from when its chunk in flight
  // ends (a device's, as handed out; a CPU worker's are short), at its power.
  auto capacity = [&](double t) {
    double c = cpu_runs() ? (double(cpu_workers_) - (except_worker ? 1 : 0)) * cpu_thr_ * (t - now) : 0.0;
    for (const Device& dev : dev_)
      if (&dev != except && !dev.stopped && dev.power > 0)
        c += dev.power * std::max(0.0, t - std::max(now, dev.busy_until));
    return c;
  };
  double hi = now + 1e-3;
  for (int i = 0; capacity(hi) < work; ++i) {
    if (i == 60) return std::numeric_limits<double>::infinity();  // nobody else can take it
    hi = now + 2 * (hi - now);
  }
  double lo = now;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (capacity(mid) < work ? lo : hi) = mid;
  }
  return hi;
}

std::size_t HGuidedScheduler::bounded(std::size_t remaining, std::size_t want, double now, const Device* dev) const {
  // The package must end by the time the other sides end the rest: the largest that does (the
  // end of the side's own package grows with it, the others' end shrinks), none if even the
  // smallest would end later.
  auto own_end = [&](double p) {
    return dev ? std::max(now, dev->busy_until) + device_seconds(*dev, p)
               : now + cpu_seconds(remaining, std::size_t(p));
  };
  auto fits = [&](double p) { return own_end(p) <= others_end(now, double(remaining) - p, dev, !dev); };
  if (fits(double(want))) return want;
  const double least = dev ? double(std::min(min_chunk_, remaining)) : 1.0;
  if (!fits(least)) return 0;
  double lo = least, hi = double(want);
  for (int i = 0; i < 40 && hi - lo > 1; ++i) {
    const double mid = 0.5 * (lo + hi);
    (fits(mid) ? lo : hi) = mid;
  }
  return std::size_t(lo);
}

std::size_t HGuidedScheduler::next_cpu(std::size_t remaining, double now) {
  // Unmeasured yet, a worker probes with a small package.
  if (!all_measured()) return std::min(remaining, min_chunk_);
  // CPU packages are not rounded to 64: a CPU iteration can take tens of microseconds (Barnes-Hut),
  // and a CPU worker is never refused a package (at least one iteration): its chunks are cheap.
  const std::size_t want = std::max<std::size_t>(1, std::size_t(double(remaining) * cpu_thr_ / (k_ * total_power())));
  return std::max<std::size_t>(1, bounded(remaining, std::min(want, remaining), now, nullptr));
}

std::size_t HGuidedScheduler::next_device(unsigned d, std::size_t remaining, double now) {
  Device& dev = dev_[d];
  if (dev.stopped) return 0;
  if (!all_measured()) {
    dev.busy_until = 0;  // not planned yet
    // A device's throughput depends on the package (small ones leave it idle), so its probe is a
    // full-sized package as if it were one more worker: a small probe would make it look weak and
    // keep its packages small (in simulation: 0.60 of the ideal instead of 0.999).
    const unsigned sides = (cpu_runs() ? cpu_workers_ : 0) + devices_;
    const double share = double(remaining) / (k_ * double(sides));
    return std::min(remaining, std::max(min_chunk_, round_up_64(std::size_t(share), remaining)));
  }
  // Nobody else left to take the rest: all of it (halving on would pay a chunk's fixed cost per step).
  // Likewise when sharing the rest would end it sooner by less than one more package of this device
  // costs (outside its kernel, and a kernel's least time): the CPU's 1-2 % of Barnes-Hut beside a GPU
  // cost the GPU three more packages (simulated: 25.0 ms where the GPU alone took 23.1).
  // (Not while another device runs: it takes packages anyway, and this one taking all left it idle.)
  bool other_devices = false;
  for (const Device& other : dev_)
    other_devices = other_devices || (&other != &dev && !other.stopped && other.power > 0);
  const double alone = double(remaining) / dev.power, shared = double(remaining) / total_power();
  if (total_power() <= dev.power || (!other_devices && alone - shared <= std::max(0.0, dev.fixed) + dev.floor)) {
    dev.busy_until = std::max(now, dev.busy_until) + device_seconds(dev, double(remaining));
    return remaining;
  }
  // No smaller than the package that fills the device (its floor at its power): a smaller one
  // takes as long, so its power would be wasted; nor so small that its cost outside the kernel
  // exceeds a tenth of it: the shrinking packages would pay a round trip each (simulated, devices
  // only, 1 ms a chunk: 42.8 ms where the device alone takes 19).
  const double least = std::max(dev.floor, 9 * std::max(0.0, dev.fixed)) * dev.power;
  const double want = std::max(double(remaining) * dev.power / (k_ * total_power()), least);
  const std::size_t package = std::min(remaining, std::max(min_chunk_, round_up_64(std::size_t(want), remaining)));
  // The side with the most power never refuses: someone must take the rest.
  bool strongest = !cpu_runs() || dev.power >= double(cpu_workers_) * cpu_thr_;
  for (const Device& other : dev_)
    if (&other != &dev && !other.stopped && other.power > dev.power) strongest = false;
  std::size_t p = strongest ? package : bounded(remaining, package, now, &dev);
  if (p == 0) {
    dev.stopped = true;  // even its smallest package would end after the others end the rest
    return 0;
  }
  p = p < package ? std::min(remaining, round_up_64(p, remaining)) : package;
  dev.busy_until = std::max(now, dev.busy_until) + device_seconds(dev, double(p));
  return p;
}

void HGuidedScheduler::on_device(unsigned d, std::size_t, std::size_t iterations, double seconds, double round_trip) {
  // A device's power is what it does with a package large enough to fill it: the best seen. A mean
  // would follow the shrinking packages down (a device runs small ones slowly), shrink its share,
  // and spiral (two devices in simulation: 0.66x one device's speed with a running mean). Each
  // device's own: a slow device's packages sized from the fast one's power hold the call's end.
  Device& dev = dev_[d];
  const double thr = double(iterations) / seconds;
  dev.power = std::max(dev.power, thr);
  // A chunk well under the device's power did not fill it: one that small or smaller takes about as
  // long (its floor). A full chunk's time says nothing of that, and taken as the floor it refused
  // the slow device every package after its probe.
  if (thr < 0.9 * dev.power) dev.floor = dev.floor > 0 ? std::min(dev.floor, seconds) : seconds;
  // The least seen: a round trip can hold a wait for the chunk queued before it.
  const double outside = std::max(0.0, round_trip - seconds);
  dev.fixed = dev.fixed < 0 ? outside : std::min(dev.fixed, outside);
}

// ---- Oracle ----------------------------------------------------------------------------------

OracleScheduler::OracleScheduler(unsigned cpu_workers, unsigned devices)
    : StaticScheduler(cpu_workers, std::vector<double>(devices ? devices : 1, 0.0)) {
  for (int i = 0; i <= 10; ++i) candidates_.push_back(i / 10.0);
}

std::string OracleScheduler::name() const {
  char share[32];
  std::snprintf(share, sizeof share, "%.2f", current_);
  return std::string("oracle, device share ") + share +
         (trying_ ? " (searching)" : " (the best of " + std::to_string(next_) + " tried)");
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
  trying_ = next_ < candidates_.size();
  current_ = trying_ ? candidates_[next_++] : best_share_;
  // The devices' part, divided in proportion to what each did last (equally until measured).
  split_by_power(current_);
  StaticScheduler::on_restart(iterations, last_call_seconds);
}

}  // namespace hetflow::detail
