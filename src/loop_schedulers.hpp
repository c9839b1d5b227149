#pragma once
// How a heterogeneous loop is cut into chunks (issue "LogFit", DESIGN.md §7): pure scheduling
// logic, no OpenCL and no clock of its own — whoever runs the chunks says what time it is when it
// asks for one and reports their sizes and times — so it is unit tested on a simulated clock
// (tests/test_loop_schedulers.cpp). One
// scheduler serves one loop across its calls (time steps): its measurements persist; restart()
// begins the next call. Thread-safe: the CPU workers and the devices' completions report at once.
//
// The CPU is `cpu_workers` workers, each asking for its own chunks; devices are numbered
// 0..devices-1, each with one chunk in flight at a time. Chunks are handed out in order from the
// front of the range: the iterations left are always its last `remaining`.
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "loop_cpu_cost.hpp"
#include "loop_region_work.hpp"

namespace hetflow::detail {

class LoopScheduler {
 public:
  LoopScheduler(unsigned cpu_workers, unsigned devices)
      : cpu_workers_(cpu_workers ? cpu_workers : 1),
        devices_(devices ? devices : 1),
        cpu_cost_(devices_ == 1),
        region_(devices_ + 1),
        kind_(devices_, -1) {}
  virtual ~LoopScheduler() = default;
  virtual std::string name() const = 0;
  // The split between the sides is the user's (static) or the one being tried (oracle): the loop
  // keeps it exactly, and no CPU chunk hands its tail to a device (LoopState::yield_tail).
  virtual bool fixed_shares() const { return false; }
  unsigned devices() const { return devices_; }
  // Devices of one kind (equal numbers: the same model) run a chunk of equal work in equal time
  // (RegionWork::same_speed). Unset, every device is its own kind.
  void same_kind(const std::vector<unsigned>& kind_of_device);
  // What it has learned, one line for the debug log (HETFLOW_LOG=debug, at each call's end).
  std::string decisions() const;

  // The next chunk for a free CPU worker / device `d`, given the iterations not yet handed out;
  // 0 = none for that side now (its token stops; a device's may instead wait for a CPU chunk's tail
  // and ask again once no CPU chunk runs: LoopState::take). Never more than
  // `remaining`. `now`: seconds since this call's restart(), on the caller's clock (LogFit plans
  // the rest of the call from it: when each side will be free).
  std::size_t cpu_chunk(std::size_t remaining, double now);
  // `piece`, where given: the size of the pieces the device should launch its chunk in, one after
  // another on its queue, each piece's results coming back while the next one's kernels run (0: the
  // chunk whole). The chunk is still one for the scheduler: one hand-out, one time, one report.
  std::size_t device_chunk(unsigned d, std::size_t remaining, double now, std::size_t* piece = nullptr);
  // A chunk [begin, begin + iterations) ran in `seconds` (devices: from profiling, not host
  // clocks); where it lies says what its iterations cost there (CpuCostProfile for the CPU;
  // RegionWork, from the CPU's chunks and those a scheduler passes on: LogFit's). A device chunk's
  // `round_trip` is the host's time from its submission to the notice of its end: with profiling it
  // also holds what the kernel's counters leave out — launch, transfers back, a late notice — which
  // the device spends idle when one chunk is in flight (0: not known).
  void record_cpu(std::size_t begin, std::size_t iterations, double seconds);
  void record_device(unsigned d, std::size_t begin, std::size_t iterations, double seconds, double round_trip = 0);
  // A device chunk of `iterations` came back (its transfers back, by profiling) in `seconds`. The
  // device's next kernel runs meanwhile, but nothing hides its last chunk's: LogFit splits a share
  // whose transfer back would hold the call's end.
  void record_transfer_back(unsigned d, std::size_t iterations, double seconds);
  // A new call of the same loop over `iterations`; the previous call took `last_call_seconds`
  // (0 for the first call), end to end. `with_cpu`: the loop has a CPU body (else no CPU chunk is
  // asked for, and the devices must share the range among themselves). `with_devices`: it has a
  // device body (else no device asks, and the CPU's chunks are cpu_only_chunk()'s).
  void restart(std::size_t iterations, double last_call_seconds = 0, bool with_cpu = true, bool with_devices = true);

 protected:
  // Called under the scheduler's lock; `d` < devices().
  virtual std::size_t next_cpu(std::size_t remaining, double /*now*/) = 0;
  virtual std::size_t next_device(unsigned d, std::size_t remaining, double /*now*/) = 0;
  virtual void on_device(unsigned, std::size_t /*begin*/, std::size_t, double /*seconds*/, double /*round_trip*/) {}
  virtual void on_transfer_back(unsigned, std::size_t /*iterations*/, double /*seconds*/) {}
  virtual void on_restart(std::size_t /*iterations*/, double /*last_call_seconds*/) {}
  virtual std::string describe() const { return region_.describe(); }  // under the lock
  // A loop without a device body: no share to plan, no speed to compare, only the workers to keep
  // busy to the end. Guided self-scheduling — half of an even share of the rest — gives each worker
  // a large first chunk and ever smaller ones after (about 2 x workers x ln(n / workers) chunks).
  // The schedulers' device logic in its place cut 64-iteration chunks for good (LogFit: 16,390
  // chunks and 22x a tbb::parallel_for's time on 1M iterations, perf/bench_chunk_overhead).
  virtual std::size_t cpu_only_chunk(std::size_t remaining) const {
    return std::max<std::size_t>(1, remaining / (2 * std::size_t(cpu_workers_)));
  }
  // Whether this call has CPU workers at all (restart's `with_cpu`).
  bool cpu_runs() const { return with_cpu_; }
  // One CPU worker on the iterations left: its mean rate over all of them (set before each
  // next_cpu/next_device: 0 while no CPU chunk was timed), the seconds of the next `p` of them,
  // and how many of them it ends within `seconds`.
  double cpu_seconds(std::size_t remaining, std::size_t p,
                     CpuCostProfile::Pricing pricing = CpuCostProfile::Pricing::cautious) const {
    return cpu_cost_.seconds(call_n_ - remaining, p, pricing);
  }
  std::size_t cpu_within(std::size_t remaining, double seconds,
                         CpuCostProfile::Pricing pricing = CpuCostProfile::Pricing::cautious) const {
    return cpu_cost_.within(call_n_ - remaining, seconds, remaining, pricing);
  }
  // The iterations at the range's end the CPU has run (no gap): past them its prices are guesses,
  // and LogFit leaves it some of them to learn from (LogFitScheduler::next_device); and how many
  // of the rest's tail the workers together end within `seconds` at the profile's prices.
  std::size_t cpu_known_tail() const { return cpu_cost_.covered_tail(); }
  double cpu_cheapest() const { return cpu_cost_.cheapest(); }  // seconds per iteration, where it ran
  std::size_t cpu_tail_within(double seconds) const { return cpu_cost_.within_tail(seconds, rest_); }
  // LogFit measures the devices in work, not iterations: an iteration's work is what its part of
  // the range costs relative to the range's mean (RegionWork), so a device is not judged faster for
  // having run a cheap part. Over a regular range work and iterations are the same numbers. Of the
  // `remaining` iterations left: the work of them all, of the next `iterations` of them, and how
  // many of them from the front hold `work`.
  double rest_work(std::size_t remaining) const { return region_.work(call_n_ - remaining, remaining); }
  double front_work(std::size_t remaining, std::size_t iterations) const {
    return region_.work(call_n_ - remaining, std::min(iterations, remaining));
  }
  std::size_t front_within(std::size_t remaining, double work, bool round_up) const {
    return region_.within(call_n_ - remaining, work, remaining, round_up);
  }
  double work_of(std::size_t begin, std::size_t iterations) const { return region_.work(begin, iterations); }
  // Every device chunk of a call, for RegionWork to learn from once the call is over; `measured`:
  // it filled the device, so its time is its work's.
  void learn_region(unsigned d, std::size_t begin, std::size_t iterations, double seconds, bool measured) {
    region_.record(d, begin, iterations, seconds, measured);
  }
  bool irregular() const { return region_.irregular(); }
  bool same_kind(unsigned d, unsigned e) const { return d == e || (kind_[d] >= 0 && kind_[d] == kind_[e]); }
  const unsigned cpu_workers_;
  const unsigned devices_;
  std::size_t piece_ = 0;  // set by next_device: the pieces to launch its chunk in (0: whole)
  double cpu_thr_ = 0;
  double rest_weight_ = 1;  // the mean work of an iteration left (set with cpu_thr_)

 private:
  void rest_is(std::size_t remaining);
  mutable std::mutex m_;
  bool with_cpu_ = true;
  bool with_devices_ = true;
  std::size_t call_n_ = 0;
  std::size_t rest_ = 0;  // the iterations left at this decision (rest_is)
  CpuCostProfile cpu_cost_;
  RegionWork region_;      // sides: the devices, then the CPU
  std::vector<int> kind_;  // by device (-1: a kind of its own)
};

// Chunks rounded up to a multiple of 64 (work-group friendly); an exact multiple stays as it is
// (the original code added 64 to those too), and nothing exceeds `cap`.
std::size_t round_up_64(std::size_t n, std::size_t cap);
// A planned device chunk: to the nearest multiple of 64 to 4096 iterations, 1/64 of it at most, and
// nothing beyond `cap` (nearest, not up: the CPU's share, rounded away call after call, was learned
// more slowly). Shares that differ by a few iterations call after call become one size: a driver
// that builds a kernel per work-group size, chosen from the global size (PoCL: the largest divisor
// up to 4096), builds it once for every chunk of a multiple of 4096 that fills its cores.
std::size_t round_planned(std::size_t n, std::size_t cap);
// A device share `n` that leaves the CPU a probe of `probe` iterations: rounded down to
// round_planned's grain, else to 64, where that leaves the CPU at most twice the probe; else n.
std::size_t probe_rounded(std::size_t n, std::size_t probe);
// Up to a multiple of a quarter of its highest power of two (64 at least): four sizes per octave.
std::size_t round_up_coarse(std::size_t n);

// A fixed share of each call goes to each device, in one chunk; the CPU workers split the rest
// in equal chunks. `device_shares` has one entry per device (their sum at most 1). The second form
// gives the devices `share` together, divided among them in proportion to what each did in the
// previous call (equally in the first): an even split would hand a device ten times slower as much
// as the fast one (simulated: 4.7x the fast device alone). Without a CPU body (restart's
// `with_cpu`) the CPU's part goes to the devices in proportion to their shares.
class StaticScheduler : public LoopScheduler {
 public:
  StaticScheduler(unsigned cpu_workers, std::vector<double> device_shares);
  StaticScheduler(unsigned cpu_workers, unsigned devices, double share);
  std::string name() const override;
  bool fixed_shares() const override { return true; }

 protected:
  std::size_t next_cpu(std::size_t remaining, double now) override;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override;
  void on_device(unsigned d, std::size_t begin, std::size_t iterations, double seconds, double round_trip) override;
  void on_restart(std::size_t iterations, double last_call_seconds) override;
  void set_shares(std::vector<double> shares);
  // `share` for the devices together, divided by their throughput in the previous call.
  void split_by_power(double share);

 private:
  std::vector<double> shares_;
  std::vector<std::size_t> device_part_;
  std::vector<bool> given_;
  std::size_t cpu_chunk_ = 0;
  double by_power_ = -1;            // the second form's share (-1: shares as given)
  std::vector<double> device_thr_;  // each device's throughput in its latest chunk
};

// Every side takes chunks of one fixed size until the range is used up.
class DynamicScheduler : public LoopScheduler {
 public:
  DynamicScheduler(unsigned cpu_workers, unsigned devices, std::size_t chunk);
  std::string name() const override;

 protected:
  std::size_t next_cpu(std::size_t remaining, double now) override;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override;
  std::size_t cpu_only_chunk(std::size_t) const override { return chunk_; }  // chunks of C, as asked

 private:
  std::size_t chunk_;
};

// LogFit (002, DESIGN.md §7), one model per device, with the original's three flaws fixed:
// rounding keeps exact multiples of 64; the elbow test is scale-free (the relative throughput
// gain of doubling the chunk, not an absolute slope that never fires on a fast device); all state
// is the instance's.
//
// The phases are 002's; what each does was changed after the H200 (docs/parallel-for.md), where a
// device chunk costs 0.2-1 ms outside its kernel and the GPU is 2-300x the CPU, so every extra
// device chunk, and every moment the device waits for the CPU, costs more than the loop can gain:
// - exploration: device chunks double from 1/1024 of the range (not from 1, 64, ...: ten chunks
//   at most cover a range), the samples are kernel throughputs, the elbow ends it. Only the loop's
//   first device chunk is skipped as a warm-up, not one per call: a tiny warm-up chunk per call
//   paid a whole round trip each time.
// - stable: once both sides are measured the call is planned from the clock: the time T at which
//   every side, working on what is left from when it is free, would end together; the device's
//   share of it in as few chunks as its per-chunk cost allows (each chunk at least the elbow and
//   long enough that the cost outside its kernel, measured from the round trips, stays under 1 %),
//   re-planned at each of its requests; each CPU chunk half the CPU's share up to T, so no CPU chunk
//   ends after the device's last one and the CPU takes only what it finishes before the device.
// - final: the device's share fits in one chunk: it takes it (or everything left, or nothing,
//   whichever the model says ends first).
// Device chunks in flight at once (device_slots > 1) are tracked: a chunk queued behind another
// starts when that one's kernel ends, so it pays no launch and no notice of its own.
// Its samples and plans count work, not iterations (RegionWork, learned from the calls): where a
// loop's iterations cost more in one part of the range than in another (Mandelbrot's rows), a
// device's throughput by size alone made the one that ran the cheap part look 30-100x faster.
class LogFitScheduler : public LoopScheduler {
 public:
  enum class Phase { exploration, stable, final };
  struct Sample {
    std::size_t chunk;
    double throughput;  // work (RegionWork) per second
    std::size_t begin;  // where it ran, and in what time: its throughput again once the work there
    double seconds;     // is known better
  };
  // `elbow_gain`: exploring stops once doubling the chunk gains less than this fraction of
  // throughput, twice in a row.
  LogFitScheduler(unsigned cpu_workers, unsigned devices = 1, double elbow_gain = 0.05);
  std::string name() const override;

  // What it decided (for logs, dumps and tests).
  Phase phase(unsigned d = 0) const { return dev_[d].phase; }
  double fit_a(unsigned d = 0) const { return dev_[d].a; }
  double fit_b(unsigned d = 0) const { return dev_[d].b; }
  std::size_t stable_chunk(unsigned d = 0) const { return dev_[d].stable_chunk; }
  double device_throughput(unsigned d = 0) const { return dev_[d].thr; }
  double chunk_cost(unsigned d = 0) const { return dev_[d].fixed; }  // seconds outside the kernel
  double cpu_throughput() const { return cpu_thr_; }                 // of one worker, on the rest

 protected:
  std::size_t next_cpu(std::size_t remaining, double now) override;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override;
  void on_device(unsigned d, std::size_t begin, std::size_t iterations, double seconds, double round_trip) override;
  void on_transfer_back(unsigned d, std::size_t iterations, double seconds) override;
  void on_restart(std::size_t iterations, double last_call_seconds) override;
  std::string describe() const override;

 private:
  struct InFlight {
    std::size_t chunk;
    double done;     // when its end's notice is expected, on the call's clock
    bool alone;      // no other chunk of the device was in flight when it was handed out
    bool first;      // the call's first: its round trip holds the call's reads going over
    bool truncated;  // exploration: less than the size due, the call's range being smaller
    bool exploring;  // handed out while exploring: it may not have filled the device
  };
  struct Device {
    Phase phase = Phase::exploration;
    std::vector<Sample> samples;
    std::size_t exploring_chunk = 0;  // 0: set from the first call's range
    bool warm_up = true;              // the loop's first chunk is not a sample
    bool stopped = false;             // its token was dropped for this call
    bool handed_this_call = false;
    bool ran_this_call = false;  // was given a chunk this call
    double a = 0, b = 0, threshold = 0;
    std::size_t stable_chunk = 0;
    double thr = 0;                        // of its latest chunk
    double fixed = 0;                      // seconds a chunk alone in flight costs outside its kernel
    double first_fixed = 0;                // the same for a call's first chunk, which also waits for the reads
    double back = 0;                       // seconds per iteration to bring a chunk's results back (0: none seen)
    std::size_t back_from = 0;             // iterations of the largest chunk `back` was learned from
    bool confirmed = false;                // a planned chunk was learned from since it explored
    int worse_calls = 0;                   // calls in a row whose judged chunks were mostly slow
    int judged_good = 0, judged_slow = 0;  // this call's
    std::vector<InFlight> in_flight;       // in submission order: an in-order queue ends them so
  };
  void fit(Device& dev);
  // The samples' throughputs again after what the range's parts cost was learned anew.
  void rework_samples();
  bool planned(const Device& dev) const { return dev.phase != Phase::exploration && dev.thr > 0; }
  double predicted(const Device& dev, std::size_t chunk) const;  // its throughput on such a chunk
  double start_of_next(const Device& dev, double now) const;     // when a new chunk's kernel would count
  double ends_within(const Device& dev, double seconds) const;   // the most one chunk of it ends in that time
  std::size_t fills_from(const Device& dev) const;               // the smallest chunk its samples say fills it
  double cpu_free(double now) const;                             // when the CPU's handed-out work ends
  // An exploring chunk of at most `chunk` for device `d` that ends no later than the others end
  // what it leaves of `remaining` (0: not even a small one does).
  std::size_t exploring_cut(unsigned d, std::size_t chunk, std::size_t remaining, double start, double now) const;
  bool others_take_part(unsigned d) const;  // the CPU or another device can take iterations this call
  // When the CPU and the planned devices (but `except`) would end `work` more iterations together.
  double end_together(double now, double work, int except = -1) const;
  std::size_t explore_from(std::size_t iterations) const;

  const double elbow_gain_;
  std::vector<Device> dev_;
  std::size_t n_ = 0;             // this call's range
  double cpu_given_seconds_ = 0;  // what the CPU took of it, in one worker's predicted seconds
  std::size_t cpu_probe_ = 0;     // the range's tail a lone device's share left the CPU this call (0: none)
  unsigned cpu_refusals_ = 0;     // CPU workers given nothing this call (their tokens stopped)
  double cpu_quota_ = 0;          // a worker's even part of the rest, once it all ends in time (0: not yet)
};

// HGuided (EngineCL, the oneAPI Coexecutor runtime): packages shrink as the range runs out, each
// side's package proportional to its measured power (throughput), so all finish together
// without a model; `k` sets how fast packages shrink, `min_chunk` bounds device packages below.
// Unlike the originals, the powers are measured online, not given by the user.
//
// Over several devices of unequal speed a package must also not hold the call's end: a device's
// chunk takes at least its floor (the shortest kernel it ran under its power: a chunk under its
// elbow takes as long as one that fills it) plus its cost outside the kernel, and a package is cut to what it ends
// while the other sides end the rest, or refused (the token stops) when even the smallest would end
// later — the side with the most power never refuses, so the scheduler always hands out the range.
// Without a CPU body (restart's `with_cpu`) the devices share the range alone.
class HGuidedScheduler : public LoopScheduler {
 public:
  HGuidedScheduler(unsigned cpu_workers, unsigned devices = 1, double k = 2.0, std::size_t min_chunk = 64);
  std::string name() const override;
  double device_power(unsigned d) const { return dev_[d].power; }

 protected:
  std::size_t next_cpu(std::size_t remaining, double now) override;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override;
  void on_device(unsigned d, std::size_t begin, std::size_t iterations, double seconds, double round_trip) override;
  void on_restart(std::size_t iterations, double last_call_seconds) override;

 private:
  struct Device {
    double power = 0;       // iterations per second on a package that fills it: the best seen
    double floor = 0;       // seconds: the shortest kernel it ran that did not fill it (0: none seen)
    double fixed = -1;      // seconds a chunk costs outside its kernel (-1: not known yet)
    double busy_until = 0;  // when its packages handed out this call end, on the call's clock
    bool stopped = false;
  };
  bool all_measured() const;
  double total_power() const;  // of the sides taking part in this call
  // Seconds a package of `p` iterations keeps device `d` (its token) busy.
  double device_seconds(const Device& dev, double p) const;
  // When the sides but `except` (a device, or one CPU worker) would end `work` more iterations.
  double others_end(double now, double work, const Device* except, bool except_worker) const;
  // The largest package of at most `want` that device `dev` (a CPU worker: null) ends no later than
  // the other sides end the rest, or 0 if none does.
  std::size_t bounded(std::size_t remaining, std::size_t want, double now, const Device* dev) const;
  double k_;
  std::size_t min_chunk_;
  std::vector<Device> dev_;
};

// The oracle: a static split whose device share it searches by running the loop — one candidate
// share per call (0, 0.1, ... 1, then steps of 0.02 around the best), keeping the best call's
// share once the search is done. With several devices the share is divided among them in
// proportion to their throughput in the previous call (equally at first). A yardstick for the
// others, not a scheduler for production.
class OracleScheduler : public StaticScheduler {
 public:
  OracleScheduler(unsigned cpu_workers, unsigned devices = 1);
  std::string name() const override;
  bool searching() const { return !refined_ || next_ < candidates_.size(); }
  double best_share() const { return best_share_; }

 protected:
  void on_restart(std::size_t iterations, double last_call_seconds) override;

 private:
  std::vector<double> candidates_;
  std::size_t next_ = 0;
  double current_ = 0, best_share_ = 0, best_seconds_ = 0;
  bool refined_ = false, trying_ = true;
};

}  // namespace hetflow::detail
