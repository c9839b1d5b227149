#pragma once
// Whether this device's completion callbacks are worth registering. Nothing depends on a callback
// alone (the completion poller, waiters and the loops' watchers notice ends too: docs/drivers.md),
// so a callback is worth what it tells first, against what it costs. A prompt one (PoCL's: 0 or 1
// of the first 64 came after their command was seen ended, in every program tried) loses that race
// only when an observer happened to look in the microseconds between the end and the callback.
// NVIDIA's come up to milliseconds late (30 to 61 of 64 on one H100), and cost on the way: a chain
// of kernel + read chunks took 36 us a chunk with no callback and 48-60 with one on each command
// (the driver's callback thread contends with the enqueues; tools/drivers/chunk_chain_probe.c), a
// loop's device chunk 103-121 us against 79-81 without any (perf/RESULTS.md, 2026-11-27
// 07:35–08:17Z). So the engine judges each registered callback once, by whichever comes first, the
// callback or the engine seeing its command end some other way (ReceiverStep::judge_callback); over the
// first kJudged, from a quarter late on, it registers no more. Decided once per engine, from what
// happened, not from the driver's name.
#include <atomic>
#include <mutex>

namespace hetflow::detail {

class CallbackWorth {
 public:
  static constexpr unsigned kJudged = 64;      // callbacks looked at before deciding
  static constexpr unsigned kLateToStop = 16;  // of those, this many brought no news: stop

  // A registered callback was judged; `news`: it came before its command was seen ended. Returns
  // true when this one made the decision (for the caller to say which, once).
  bool arrived(bool news) {
    if (judged_.load(std::memory_order_acquire)) return false;
    std::lock_guard lock(m_);
    if (judged_.load(std::memory_order_relaxed)) return false;
    ++arrived_;
    if (!news) ++late_;
    if (arrived_ < kJudged) return false;
    worth_.store(late_ < kLateToStop, std::memory_order_release);
    judged_.store(true, std::memory_order_release);
    return true;
  }
  bool worth_registering() const { return worth_.load(std::memory_order_acquire); }
  unsigned late() const {  // of the first kJudged; final once arrived() returned true
    std::lock_guard lock(m_);
    return late_;
  }

 private:
  mutable std::mutex m_;
  unsigned arrived_ = 0, late_ = 0;
  std::atomic<bool> judged_{false};
  std::atomic<bool> worth_{true};
};

}  // namespace hetflow::detail
