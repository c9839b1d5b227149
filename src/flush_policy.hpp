#pragma once
// When the streaming node flushes a command queue. A clFlush costs the calling thread over a
// microsecond on NVIDIA's OpenCL (perf/bench_driver_calls on the H200: 1.3 us with nothing new,
// 3 us after an empty kernel), so one flush per command was most of what hetflow added per request
// there. A queue is flushed when something needs its commands submitted:
//   - a command on another queue is about to wait on one of them (OpenCL requires the flush);
//   - a host-side consumer waits on one (Engine::watch flushes on its own);
//   - the streaming node has nothing more to enqueue for now (a burst ended);
//   - it holds `max_commands` unflushed commands, or its oldest has waited `max_age_ns`, so a
//     long burst still feeds the device.
// Pure bookkeeping, no OpenCL: the caller flushes. Used by the serial streaming node only.
#include <cstdint>
#include <vector>

namespace hetflow::detail {

class FlushPolicy {
 public:
  FlushPolicy(std::size_t queues, unsigned max_commands, std::int64_t max_age_ns)
      : queues_(queues), max_commands_(max_commands), max_age_ns_(max_age_ns) {}

  bool dirty(unsigned q) const { return queues_[q].unflushed > 0; }
  void flushed(unsigned q) { queues_[q].unflushed = 0; }

  // A command was just enqueued on q at `now_ns`; calls flush(q) for every queue due by count or age.
  template <class Flush>
  void enqueued(unsigned q, std::int64_t now_ns, Flush&& flush) {
    auto& s = queues_[q];
    if (s.unflushed++ == 0) s.oldest_ns = now_ns;
    for (unsigned i = 0; i < queues_.size(); ++i) {
      const auto& t = queues_[i];
      if (t.unflushed > 0 && (t.unflushed >= max_commands_ || now_ns - t.oldest_ns >= max_age_ns_)) {
        flush(i);
        flushed(i);
      }
    }
  }

  // The streaming node ran dry: every dirty queue goes to the device.
  template <class Flush>
  void idle(Flush&& flush) {
    for (unsigned i = 0; i < queues_.size(); ++i)
      if (dirty(i)) {
        flush(i);
        flushed(i);
      }
  }

 private:
  struct Queue {
    unsigned unflushed = 0;
    std::int64_t oldest_ns = 0;
  };
  std::vector<Queue> queues_;
  unsigned max_commands_;
  std::int64_t max_age_ns_;
};

}  // namespace hetflow::detail
