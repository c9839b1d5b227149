#pragma once
// Wakes now and then to check the device commands that completion hooks and host tasks wait for,
// while any waits on one. Hooks (Controller::on_ready) run when their commands end, but nobody may
// block or spin for them, and the driver's word can come late or not at all: NVIDIA's completion
// callbacks arrive milliseconds late, PoCL 3.1's never fire for a command that failed
// (docs/drivers.md). Waits and host tasks check on their way, but a pipeline of hooks may have
// neither, and a host task after a D2H waited for whichever thread checked next (Jacobi 8192 on the
// H200: 9 % behind hand-written OpenCL, 2.5 % ahead once host tasks held this thread too). So this
// thread checks, sleeping in between (100 us, doubling to 1 ms while nothing ends) and not at all
// while nothing waits. A shorter longest interval does not speed up the flow-graph Sobel on the
// H200 (250 us and 100 us against 1 ms, perf/RESULTS.md 2026-11-25), so 1 ms stays and spares the
// CPU.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace hetflow::detail {

class CompletionPoller {
 public:
  // `check` reports whether something ended (the engine's poll of its watched commands).
  explicit CompletionPoller(std::function<bool()> check) : check_(std::move(check)) {}
  ~CompletionPoller();
  CompletionPoller(const CompletionPoller&) = delete;
  CompletionPoller& operator=(const CompletionPoller&) = delete;

  // Before the first hold(): other intervals (HETFLOW_DEBUG_POLL_US, tests).
  void set_intervals(std::chrono::microseconds first, std::chrono::microseconds longest) {
    std::lock_guard lock(m_);
    first_ = first;
    longest_ = longest;
    interval_ = first;
  }

  void hold();     // a hook or host task now waits on a device command (starts the thread the first time)
  void release();  // it is ready to run, or ended
  // A command waited for is expected to end at `at` (a loop's device chunk, from the chunks before):
  // the thread also checks then, and from then on at the first interval, doubling. Without it a chunk of
  // a few milliseconds was noticed up to the longest interval late, all of it idle time for a
  // device with one chunk in flight (perf/bench_chunk_overhead with the poller alone). Never later
  // than without the hint; a wrong one costs a check.
  void expect(std::chrono::steady_clock::time_point at);

 private:
  void run();

  std::function<bool()> check_;
  std::mutex m_;
  std::condition_variable cv_;
  unsigned holders_ = 0;
  bool stopping_ = false;
  std::chrono::microseconds first_{100}, longest_{1000};
  std::chrono::microseconds interval_ = first_;
  std::chrono::steady_clock::time_point expected_ = std::chrono::steady_clock::time_point::max();  // earliest hint
  bool hinted_ = false;  // expect() came since the thread last looked at expected_
  std::thread thread_;
};

}  // namespace hetflow::detail
