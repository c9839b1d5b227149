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

// The same thread pays the flushes the streaming node put off (src/flush_policy.hpp): after
// flush_soon() it calls `flush` about every 50 us until that finds nothing left to flush.
class CompletionPoller {
 public:
  // `check` reports whether something ended (the engine's poll of its watched commands); `flush`
  // flushes the queues left dirty and reports whether it must be called again.
  CompletionPoller(std::function<bool()> check, std::function<bool()> flush)
      : check_(std::move(check)), flush_(std::move(flush)) {}
  ~CompletionPoller();
  CompletionPoller(const CompletionPoller&) = delete;
  CompletionPoller& operator=(const CompletionPoller&) = delete;

  void hold();     // a hook or host task now waits on a device command (starts the thread the first time)
  void release();  // it is ready to run, or ended
  // The streaming node left a queue dirty; called once until `flush` reports nothing left, and
  // after that report (both under the streaming node's lock), so no request for a flush is lost.
  void flush_soon();

 private:
  void run();

  std::function<bool()> check_;
  std::function<bool()> flush_;
  std::mutex m_;
  std::condition_variable cv_;
  unsigned holders_ = 0;
  unsigned flush_requests_ = 0;  // flush_soon() calls so far
  bool stopping_ = false;
  std::chrono::microseconds interval_{100};
  std::thread thread_;
};

}  // namespace hetflow::detail
