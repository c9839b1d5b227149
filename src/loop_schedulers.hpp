#pragma once
// How a heterogeneous loop is cut into chunks (issue "LogFit", DESIGN.md §7): pure scheduling
// logic, no OpenCL and no clock of its own — whoever runs the chunks says what time it is when it
// asks for one and reports their sizes and times — so it is unit tested on a simulated clock
// (tests/test_loop_schedulers.cpp). One
// scheduler serves one loop across its calls (time steps): its measurements persist; restart()
// begins the next call. Thread-safe: the CPU workers and the devices' completions report at once.
//
// The CPU is `cpu_workers` workers, each asking for its own chunks; devices are numbered
// 0..devices-1, each with one chunk in flight at a time.
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace hetflow::detail {

class LoopScheduler {
 public:
  LoopScheduler(unsigned cpu_workers, unsigned devices)
      : cpu_workers_(cpu_workers ? cpu_workers : 1), devices_(devices ? devices : 1) {}
  virtual ~LoopScheduler() = default;
  virtual std::string name() const = 0;
  unsigned devices() const { return devices_; }

  // The next chunk for a free CPU worker / device `d`, given the iterations not yet handed out;
  // 0 = none for that side now (its token is dropped for the rest of the call). Never more than
  // `remaining`. `now`: seconds since this call's restart(), on the caller's clock (LogFit plans
  // the rest of the call from it: when each side will be free).
  std::size_t cpu_chunk(std::size_t remaining, double now);
  std::size_t device_chunk(unsigned d, std::size_t remaining, double now);
  // A chunk of `iterations` ran in `seconds` (devices: from profiling, not host clocks). A device
  // chunk's `round_trip` is the host's time from its submission to the notice of its end: with
  // profiling it also holds what the kernel's counters leave out — launch, transfers back, a late
  // notice — which the device spends idle when one chunk is in flight (0: not known).
  void record_cpu(std::size_t iterations, double seconds);
  void record_device(unsigned d, std::size_t iterations, double seconds, double round_trip = 0);
  // A new call of the same loop over `iterations`; the previous call took `last_call_seconds`
  // (0 for the first call), end to end.
  void restart(std::size_t iterations, double last_call_seconds = 0);

 protected:
  // Called under the scheduler's lock; `d` < devices().
  virtual std::size_t next_cpu(std::size_t remaining, double /*now*/) = 0;
  virtual std::size_t next_device(unsigned d, std::size_t remaining, double /*now*/) = 0;
  virtual void on_cpu(std::size_t, double) {}
  virtual void on_device(unsigned, std::size_t, double /*seconds*/, double /*round_trip*/) {}
  virtual void on_restart(std::size_t /*iterations*/, double /*last_call_seconds*/) {}
  const unsigned cpu_workers_;
  const unsigned devices_;

 private:
  std::mutex m_;
};

// Chunks rounded up to a multiple of 64 (work-group friendly); an exact multiple stays as it is
// (the original code added 64 to those too), and nothing exceeds `cap`.
std::size_t round_up_64(std::size_t n, std::size_t cap);

// A fixed share of each call goes to each device, in one chunk; the CPU workers split the rest
// in equal chunks. `device_shares` has one entry per device (their sum at most 1).
class StaticScheduler : public LoopScheduler {
 public:
  StaticScheduler(unsigned cpu_workers, std::vector<double> device_shares);
  std::string name() const override;

 protected:
  std::size_t next_cpu(std::size_t remaining, double now) override;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override;
  void on_restart(std::size_t iterations, double last_call_seconds) override;
  void set_shares(std::vector<double> shares);

 private:
  std::vector<double> shares_;
  std::vector<std::size_t> device_part_;
  std::vector<bool> given_;
  std::size_t cpu_chunk_ = 0;
};

// Every side takes chunks of one fixed size until the range is used up.
class DynamicScheduler : public LoopScheduler {
 public:
  DynamicScheduler(unsigned cpu_workers, unsigned devices, std::size_t chunk);
  std::string name() const override;

 protected:
  std::size_t next_cpu(std::size_t remaining, double now) override;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override;

 private:
  std::size_t chunk_;
};

// LogFit (002, DESIGN.md §7), one model per device, with the original's three flaws fixed:
// rounding keeps exact multiples of 64; the elbow test is scale-free (the relative throughput
// gain of doubling the chunk, not an absolute slope that never fires on a fast device); all state
// is the instance's.
class LogFitScheduler : public LoopScheduler {
 public:
  enum class Phase { exploration, stable, final };
  struct Sample {
    std::size_t chunk;
    double throughput;  // iterations per second
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
  double cpu_throughput() const { return cpu_thr_; }  // of one worker

 protected:
  std::size_t next_cpu(std::size_t remaining, double now) override;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override;
  void on_cpu(std::size_t iterations, double seconds) override;
  void on_device(unsigned d, std::size_t iterations, double seconds, double round_trip) override;
  void on_restart(std::size_t iterations, double last_call_seconds) override;

 private:
  struct Device {
    Phase phase = Phase::exploration;
    std::vector<Sample> samples;
    std::size_t exploring_chunk = 1;  // exploration: doubles from 1
    bool warm_up = true;              // the first chunk of a call is not recorded
    bool stopped = false;             // its final chunk of this call was handed out
    double a = 0, b = 0, threshold = 0;
    std::size_t stable_chunk = 0;
    double thr = 0;
    int worse_in_a_row = 0;
  };
  void fit(Device& dev);
  double measured_device_throughput() const;  // of the devices still running
  bool final_phase_due(const Device& dev, std::size_t remaining) const;

  const double elbow_gain_;
  std::vector<Device> dev_;
  double cpu_thr_ = 0;
};

// HGuided (EngineCL, the oneAPI Coexecutor runtime): packages shrink as the range runs out, each
// side's package proportional to its measured power (throughput), so all finish together
// without a model; `k` sets how fast packages shrink, `min_chunk` bounds them below. Unlike the
// originals, the powers are measured online, not given by the user.
class HGuidedScheduler : public LoopScheduler {
 public:
  HGuidedScheduler(unsigned cpu_workers, unsigned devices = 1, double k = 2.0, std::size_t min_chunk = 64);
  std::string name() const override;

 protected:
  std::size_t next_cpu(std::size_t remaining, double now) override;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override;
  void on_cpu(std::size_t iterations, double seconds) override;
  void on_device(unsigned d, std::size_t iterations, double seconds, double round_trip) override;

 private:
  bool all_measured() const;
  std::size_t package(std::size_t remaining, double power) const;
  double k_;
  std::size_t min_chunk_;
  double cpu_thr_ = 0;  // one CPU worker
  std::vector<double> device_thr_;
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
  void on_device(unsigned d, std::size_t iterations, double seconds, double round_trip) override;
  void on_restart(std::size_t iterations, double last_call_seconds) override;

 private:
  std::vector<double> candidates_;
  std::size_t next_ = 0;
  double current_ = 0, best_share_ = 0, best_seconds_ = 0;
  bool refined_ = false;
  std::vector<double> device_thr_;
};

}  // namespace hetflow::detail
