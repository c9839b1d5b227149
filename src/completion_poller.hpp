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
// It also flushes the queues the streaming node left unflushed when it ran dry (flush_soon), within
// 200 us when it is not already sleeping longer for a check, and stays awake 5 ms after such a flush
// so that a pipeline's next ones cost their threads no wake-up (a flush put off with a wake-up each
// time lost 3-11 us per launch + wait round trip on the H100, perf/RESULTS.md 2026-11-25).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace hetflow::detail {

class CompletionPoller {
 public:
  // `check` reports whether something ended (the engine's poll of its watched commands); `flush`
  // flushes the queues holding unflushed commands.
  CompletionPoller(std::function<bool()> check, std::function<void()> flush)
      : check_(std::move(check)), flush_(std::move(flush)) {}
  ~CompletionPoller();
  CompletionPoller(const CompletionPoller&) = delete;
  CompletionPoller& operator=(const CompletionPoller&) = delete;

  void hold();     // a hook or host task now waits on a device command (starts the thread the first time)
  void release();  // it is ready to run, or ended
  // Queues hold unflushed commands: flush them from this thread soon. Any thread; a call while a
  // flush is already due costs an atomic exchange.
  void flush_soon();

 private:
  void run();

  void start_thread();  // under m_, once
  std::function<bool()> check_;
  std::function<void()> flush_;
  std::mutex m_;
  std::condition_variable cv_;
  unsigned holders_ = 0;
  bool stopping_ = false;
  std::atomic<bool> flush_due_{false};
  bool idle_wait_ = false;                               // sleeping until a holder or a flush comes
  std::chrono::steady_clock::time_point awake_until_{};  // after a flush: ticks on, no wake-up needed
  std::chrono::microseconds interval_{100};
  std::thread thread_;
};

}  // namespace hetflow::detail
