#pragma once
// How a heterogeneous loop is cut into chunks (issue "LogFit", DESIGN.md §7): pure scheduling
// logic, no OpenCL and no clock of its own — whoever runs the chunks reports their sizes and
// times — so it is unit tested on a simulated clock (tests/test_loop_schedulers.cpp). One
// scheduler serves one loop across its calls (time steps): its measurements persist; restart()
// begins the next call. Thread-safe: the CPU workers and the device's completion report at once.
//
// Side 0 is the CPU: `cpu_workers` workers, each asking for its own chunks. Side 1 is the device.
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hetflow::detail {

class LoopScheduler {
 public:
  explicit LoopScheduler(unsigned cpu_workers) : cpu_workers_(cpu_workers ? cpu_workers : 1) {}
  virtual ~LoopScheduler() = default;
  virtual std::string name() const = 0;

  // The next chunk for a free CPU worker / the device, given the iterations not yet handed out;
  // 0 = none for that side now (its token is dropped for the rest of the call). Never more than
  // `remaining`.
  std::size_t cpu_chunk(std::size_t remaining);
  std::size_t device_chunk(std::size_t remaining);
  // A chunk of `iterations` ran in `seconds` (device: from profiling, not host clocks).
  void record_cpu(std::size_t iterations, double seconds);
  void record_device(std::size_t iterations, double seconds);
  // A new call of the same loop over `iterations`; the previous call took `last_call_seconds`
  // (0 for the first call), end to end.
  void restart(std::size_t iterations, double last_call_seconds = 0);

 protected:
  // Called under the scheduler's lock.
  virtual std::size_t next_cpu(std::size_t remaining) = 0;
  virtual std::size_t next_device(std::size_t remaining) = 0;
  virtual void on_cpu(std::size_t, double) {}
  virtual void on_device(std::size_t, double) {}
  virtual void on_restart(std::size_t /*iterations*/, double /*last_call_seconds*/) {}
  const unsigned cpu_workers_;

 private:
  std::mutex m_;
};

// Chunks rounded up to a multiple of 64 (work-group friendly); an exact multiple stays as it is
// (the original code added 64 to those too), and nothing exceeds `cap`.
std::size_t round_up_64(std::size_t n, std::size_t cap);

// A fixed share of each call goes to the device, in one chunk; the CPU workers split the rest in
// equal chunks.
class StaticScheduler : public LoopScheduler {
 public:
  StaticScheduler(unsigned cpu_workers, double device_share);
  std::string name() const override;

 protected:
  std::size_t next_cpu(std::size_t remaining) override;
  std::size_t next_device(std::size_t remaining) override;
  void on_restart(std::size_t iterations, double last_call_seconds) override;
  void set_share(double share) { share_ = share; }

 private:
  double share_;
  std::size_t total_ = 0, device_left_ = 0, cpu_chunk_ = 0;
  bool device_given_ = false;
};

// Every side takes chunks of one fixed size until the range is used up.
class DynamicScheduler : public LoopScheduler {
 public:
  DynamicScheduler(unsigned cpu_workers, std::size_t chunk);
  std::string name() const override;

 protected:
  std::size_t next_cpu(std::size_t remaining) override;
  std::size_t next_device(std::size_t remaining) override;

 private:
  std::size_t chunk_;
};

// LogFit (002, DESIGN.md §7), with the original's three flaws fixed: rounding keeps exact
// multiples of 64; the elbow test is scale-free (the relative throughput gain of doubling the
// chunk, not an absolute slope that never fires on a fast device); all state is the instance's.
class LogFitScheduler : public LoopScheduler {
 public:
  enum class Phase { exploration, stable, final };
  struct Sample {
    std::size_t chunk;
    double throughput;  // iterations per second
  };
  // `elbow_gain`: exploring stops once doubling the chunk gains less than this fraction of
  // throughput, twice in a row.
  explicit LogFitScheduler(unsigned cpu_workers, double elbow_gain = 0.05);
  std::string name() const override;

  // What it decided (for logs, dumps and tests).
  Phase phase() const { return phase_; }
  double fit_a() const { return a_; }
  double fit_b() const { return b_; }
  std::size_t stable_chunk() const { return stable_chunk_; }
  double device_throughput() const { return device_thr_; }
  double cpu_throughput() const { return cpu_thr_; }  // of one worker

 protected:
  std::size_t next_cpu(std::size_t remaining) override;
  std::size_t next_device(std::size_t remaining) override;
  void on_cpu(std::size_t iterations, double seconds) override;
  void on_device(std::size_t iterations, double seconds) override;
  void on_restart(std::size_t iterations, double last_call_seconds) override;

 private:
  void fit();
  bool final_phase_due(std::size_t remaining) const;

  const double elbow_gain_;
  Phase phase_ = Phase::exploration;
  std::vector<Sample> samples_;
  std::size_t exploring_chunk_ = 1;   // exploration: doubles from 1
  std::size_t asked_ = 0;             // the device chunk last handed out
  bool warm_up_ = true;               // the first device chunk of a call is not recorded
  bool device_stopped_ = false;       // the final phase left the rest to the CPU
  double a_ = 0, b_ = 0, threshold_ = 0;
  std::size_t stable_chunk_ = 0;
  double device_thr_ = 0, cpu_thr_ = 0;
  int worse_in_a_row_ = 0;
};

// HGuided (EngineCL, the oneAPI Coexecutor runtime): packages shrink as the range runs out, each
// side's package proportional to its measured power (throughput), so both finish together
// without a model; `k` sets how fast packages shrink, `min_chunk` bounds them below. Unlike the
// originals, the powers are measured online, not given by the user.
class HGuidedScheduler : public LoopScheduler {
 public:
  HGuidedScheduler(unsigned cpu_workers, double k = 2.0, std::size_t min_chunk = 64);
  std::string name() const override;

 protected:
  std::size_t next_cpu(std::size_t remaining) override;
  std::size_t next_device(std::size_t remaining) override;
  void on_cpu(std::size_t iterations, double seconds) override;
  void on_device(std::size_t iterations, double seconds) override;

 private:
  std::size_t package(std::size_t remaining, double power) const;
  double k_;
  std::size_t min_chunk_;
  double cpu_thr_ = 0, device_thr_ = 0;  // one CPU worker; the device
};

// The oracle: a static split whose share it searches by running the loop — one candidate share
// per call (0, 0.1, ... 1, then steps of 0.02 around the best), keeping the best call's share
// once the search is done. A yardstick for the others, not a scheduler for production.
class OracleScheduler : public StaticScheduler {
 public:
  explicit OracleScheduler(unsigned cpu_workers);
  std::string name() const override;
  bool searching() const { return !refined_ || next_ < candidates_.size(); }
  double best_share() const { return best_share_; }

 protected:
  void on_restart(std::size_t iterations, double last_call_seconds) override;

 private:
  std::vector<double> candidates_;
  std::size_t next_ = 0;
  double current_ = 0, best_share_ = 0, best_seconds_ = 0;
  bool refined_ = false;
};

}  // namespace hetflow::detail
