#pragma once
// When the streaming node flushes a command queue. A clFlush costs the calling thread over a
// microsecond on NVIDIA's OpenCL (perf/bench_driver_calls on the H200: 1.3 us with nothing new,
// 3 us after an empty kernel), so one flush per command was most of what hetflow added per request
// there. A queue is flushed when something needs its commands submitted:
//   - a command on another queue is about to wait on one of them (OpenCL requires the flush);
//   - a host-side consumer waits on one (ReceiverStep::watch, or a wait blocking on the event itself);
//   - the streaming node has nothing more to enqueue for now (idle()), where the device runs no
//     command until it is flushed (src/unflushed_probe.hpp: NVIDIA and PoCL run them anyway);
//   - it holds `max_commands` unflushed commands, or its oldest has waited `max_age_ns`, so a
//     long burst still feeds the device — again only where the device runs no command until it is
//     flushed (drop_burst_flushes()): on NVIDIA these flushes, one per ~5 pipelined kernels, cost
//     a request ~0.6 us and started nothing the driver had not started already.
// Any flush counts, whoever makes it, and a queue with nothing new is not flushed again: a wait
// after a launch used to flush a second time (1.3 us on NVIDIA for nothing).
// Putting the idle flush off for a moment after another (paid by the completion poller's thread)
// was measured and dropped: 1-1.5 us less per pipelined kernel on the H100, but 1-4.5 us more per
// 4-byte transfer and 6-11 us more per launch + wait round trip (perf/RESULTS.md, 2026-11-25
// "the idle flush put off and dropped"). Tried again on 2026-11-26 with the poller awake 5 ms after
// each flush so that it needed no wake-up per request: worse still on the H200 (pipelined empty
// kernel +3.7-5.7 us against +2.2-3.6, launch + wait +8-9.6 against +1.9-3.0, and the process's CPU
// time up 55 %): clFlush from a second thread beside a stream of enqueues costs more than from the
// enqueuing one (perf/RESULTS.md, 2026-11-26 02:52Z).
// Pure bookkeeping, no OpenCL: the caller flushes. enqueued() runs under the streaming node's
// lock, before the command's event is visible to any other thread (one that saw the event and found
// the queue clean would skip a flush the command needs); flush_if_dirty() and idle() run on any thread.
#include <atomic>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace hetflow::detail {

class FlushPolicy {
 public:
  FlushPolicy(std::size_t queues, unsigned max_commands, std::int64_t max_age_ns)
      : queues_(std::make_unique<Queue[]>(queues)),
        count_(queues),
        max_commands_(max_commands),
        max_age_ns_(max_age_ns) {}

  // q holds commands enqueued and not flushed since.
  bool dirty(unsigned q) const { return unflushed(queues_[q]) > 0; }

  // Flushes q through `flush_fn(q)` and records it: every command enqueued before counts as submitted.
  template <class Flush>
  void flush(unsigned q, Flush&& flush_fn) {
    Queue& s = queues_[q];
    const std::uint64_t through = s.enqueued.load(std::memory_order_acquire);
    flush_fn(q);
    std::uint64_t seen = s.flushed.load(std::memory_order_relaxed);
    while (seen < through && !s.flushed.compare_exchange_weak(seen, through, std::memory_order_acq_rel)) {
    }
  }

  // As flush(), only if q holds a command not flushed yet.
  template <class Flush>
  void flush_if_dirty(unsigned q, Flush&& flush_fn) {
    if (dirty(q)) flush(q, flush_fn);
  }

  // The device runs commands nobody flushed (src/unflushed_probe.hpp): a burst is not flushed by
  // count or age. Before the first command.
  void drop_burst_flushes() { burst_flushes_ = false; }

  // A command was just enqueued on q at `now_ns` (nanoseconds, or a function returning them: then
  // the clock is read only where the time is used: never on a device that runs unflushed commands); flushes every queue
  // due by count or age.
  template <class Now, class Flush>
  void enqueued(unsigned q, Now&& now, Flush&& flush_fn) {
    std::int64_t now_ns = -1;
    const auto read_now = [&] {
      if (now_ns < 0) {
        if constexpr (std::is_invocable_v<Now>)
          now_ns = now();
        else
          now_ns = now;
      }
      return now_ns;
    };
    Queue& s = queues_[q];
    if (burst_flushes_ && !dirty(q)) s.oldest_ns = read_now();  // only a burst's age reads it
    s.enqueued.fetch_add(1, std::memory_order_acq_rel);
    if (!burst_flushes_) return;
    read_now();
    for (unsigned i = 0; i < count_; ++i) {
      const Queue& t = queues_[i];
      const std::uint64_t n = unflushed(t);
      if (n > 0 && (n >= max_commands_ || now_ns - t.oldest_ns >= max_age_ns_)) flush(i, flush_fn);
    }
  }

  // The streaming node ran dry: every dirty queue goes to the device. Returns whether there was one.
  template <class Flush>
  bool idle(Flush&& flush_fn) {
    bool any = false;
    for (unsigned i = 0; i < count_; ++i)
      if (dirty(i)) {
        flush(i, flush_fn);
        any = true;
      }
    return any;
  }

 private:
  struct Queue {
    std::atomic<std::uint64_t> enqueued{0};  // commands so far
    std::atomic<std::uint64_t> flushed{0};   // of them, known flushed
    std::int64_t oldest_ns = 0;              // when the first unflushed one came (under the node's lock)
  };
  static std::uint64_t unflushed(const Queue& s) {
    const std::uint64_t e = s.enqueued.load(std::memory_order_acquire), f = s.flushed.load(std::memory_order_acquire);
    return e > f ? e - f : 0;
  }
  std::unique_ptr<Queue[]> queues_;
  std::size_t count_;
  unsigned max_commands_;
  std::int64_t max_age_ns_;
  bool burst_flushes_ = true;
};

}  // namespace hetflow::detail
