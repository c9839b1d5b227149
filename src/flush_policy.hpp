#pragma once
// When the streaming node flushes a command queue. A clFlush costs the calling thread over a
// microsecond on NVIDIA's OpenCL (perf/bench_driver_calls on the H200: 1.3 us with nothing new,
// 3 us after an empty kernel), so one flush per command was most of what hetflow added per request
// there. A queue is flushed when something needs its commands submitted:
//   - a command on another queue is about to wait on one of them (OpenCL requires the flush);
//   - a host-side consumer waits on one (Engine::watch flushes on its own);
//   - the streaming node has nothing more to enqueue for now, unless the queue was flushed less
//     than `max_age_ns` ago: then the device has its earlier commands to run, and the caller owes
//     a flush within `max_age_ns` (idle_at() says so; the completion poller's thread pays it). A
//     program submitting one request at a time leaves the node idle after each, and flushing every
//     time was the largest part of hetflow's cost per pipelined request on the H200 (1 us of 2.3,
//     perf record, perf/RESULTS.md 2026-11-25 "Per request");
//   - it holds `max_commands` unflushed commands, or its oldest has waited `max_age_ns`, so a
//     long burst still feeds the device.
// Pure bookkeeping, no OpenCL: the caller flushes. Used under the streaming node's lock only.
#include <cstdint>
#include <vector>

namespace hetflow::detail {

class FlushPolicy {
 public:
  FlushPolicy(std::size_t queues, unsigned max_commands, std::int64_t max_age_ns)
      : queues_(queues), max_commands_(max_commands), max_age_ns_(max_age_ns) {}

  bool dirty(unsigned q) const { return queues_[q].unflushed > 0; }
  // Flushed by the caller for another reason (a dependant on another queue waits on it).
  void flushed(unsigned q) { queues_[q].unflushed = 0; }

  // A command was just enqueued on q at `now_ns`; calls flush(q) for every queue due by count or age.
  template <class Flush>
  void enqueued(unsigned q, std::int64_t now_ns, Flush&& flush) {
    auto& s = queues_[q];
    if (s.unflushed++ == 0) s.oldest_ns = now_ns;
    for (unsigned i = 0; i < queues_.size(); ++i) {
      const auto& t = queues_[i];
      if (t.unflushed > 0 && (t.unflushed >= max_commands_ || now_ns - t.oldest_ns >= max_age_ns_))
        flush_now(i, now_ns, flush);
    }
  }

  // The streaming node ran dry at `now_ns`: every dirty queue not flushed within max_age goes to
  // the device now. Returns whether one was left dirty: then idle() is owed within max_age.
  template <class Flush>
  bool idle_at(std::int64_t now_ns, Flush&& flush) {
    bool deferred = false;
    for (unsigned i = 0; i < queues_.size(); ++i) {
      if (!dirty(i)) continue;
      if (now_ns - queues_[i].last_flush_ns >= max_age_ns_)
        flush_now(i, now_ns, flush);
      else
        deferred = true;
    }
    return deferred;
  }

  // Every dirty queue goes to the device. Returns whether there was one.
  template <class Flush>
  bool idle(std::int64_t now_ns, Flush&& flush) {
    bool any = false;
    for (unsigned i = 0; i < queues_.size(); ++i)
      if (dirty(i)) {
        flush_now(i, now_ns, flush);
        any = true;
      }
    return any;
  }

 private:
  template <class Flush>
  void flush_now(unsigned q, std::int64_t now_ns, Flush& flush) {
    flush(q);
    queues_[q].unflushed = 0;
    queues_[q].last_flush_ns = now_ns;
  }
  struct Queue {
    unsigned unflushed = 0;
    std::int64_t oldest_ns = 0;
    std::int64_t last_flush_ns = INT64_MIN / 2;  // never: the first command of a run goes at once
  };
  std::vector<Queue> queues_;
  unsigned max_commands_;
  std::int64_t max_age_ns_;
};

}  // namespace hetflow::detail
