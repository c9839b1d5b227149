#pragma once
// The OpenCL streaming node (docs/architecture.md, "The flow of a request"): serial, so each queue
// receives its commands in program order, except those held back until a host predecessor has ended.
// It enqueues with event wait lists and returns at once. It owns what only the enqueuing side
// touches: when each queue is flushed (src/flush_policy.hpp), how many device requests were handed to
// it and not yet taken (so it knows when a burst ended), and, on PoCL < 7.0, the last launch of each
// kernel (docs/drivers.md, "One kernel, several launches at once"), and the commands it enqueued whose
// end nobody has observed yet. Its step runs in the node's body, or on a submitting thread while the
// node is idle, always under mutex().
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "flush_policy.hpp"
#include "pocl_kernel_cache.hpp"
#include "request.hpp"

namespace hetflow::detail {

class Engine;

class StreamingStep {
 public:
  // `queues`: the engine's lanes; `chain_launches`: launches of one kernel must not overlap (PoCL < 7.0).
  StreamingStep(Engine& engine, std::size_t queues, bool chain_launches);

  std::mutex& mutex() { return mutex_; }
  // The step, under mutex(): r, then the commands its enqueue releases (they waited for r's event).
  void enqueue(const RequestPtr& r);
  // A device request is on its way to the step (counted before the hand-over): the step flushes
  // what it held back when the count drops to zero. Returns the count before this one.
  std::size_t handed_over(std::memory_order order = std::memory_order_relaxed) { return backlog_.fetch_add(1, order); }
  // Under mutex(): the flush OpenCL requires before a command on another queue waits on `lane`.
  void flush_for_wait(unsigned lane, unsigned own_lane);
  // Any thread (a waiter, a callback's registration): flushes `lane` unless every command on it
  // was flushed already (by a burst's count, another waiter, or the idle flush where the device
  // needs one). A clFlush with nothing new still costs 1.3 us on NVIDIA (perf/bench_driver_calls).
  void flush_lane(unsigned lane);
  // Async: the flushes made only so that the device starts its commands — when the step runs dry,
  // and every few commands of a burst (src/flush_policy.hpp) — dropped where the device runs
  // unflushed commands anyway (src/unflushed_probe.hpp). Once, before the first request.
  void drop_start_flushes() {
    flush_when_idle_ = false;
    flush_policy_.drop_burst_flushes();
  }
  bool chains_launches() const { return kernel_cache_.taken(); }
  // Whether running[i] is among the running predecessors of another of running[0, count): that one
  // waited on it (by its event, or through one that did), so a command waiting on that one waits on
  // it too, and its failure still reaches the command (docs/architecture.md, "The flow of a
  // request"). What collect_wait_list leaves out of a wait list.
  static bool waited_on_by_another(const RequestList& running, std::size_t count, std::size_t i);
  const KernelCacheSlot& kernel_cache() const { return kernel_cache_; }

 private:
  // Count what r waits for, then enqueue it once nothing is left.
  void advance(const RequestPtr& r, RequestList& released);
  // enqueue_command's phases: the events r waits on (or why it is cancelled), the flushes and the
  // PoCL chaining they need, the driver call, then what r's enqueue releases.
  void enqueue_command(const RequestPtr& r, RequestList& released);
  // The events r waits on, r.preds cut to the predecessors still running; or why r is cancelled.
  // `implied`: bit i for the predecessor i left out because another one waited on it.
  std::string collect_wait_list(Request& r, std::vector<cl_event>& wait_list, std::uint32_t& implied);

  void chain_previous_launch(const Request& r, std::vector<cl_event>& wait_list);
  cl_int enqueue_on_driver(Request& r, const std::vector<cl_event>& wait_list, cl_event* ev, std::string& what);
  // r.preds (the predecessors still running) become its running_preds.
  void after_enqueue(const RequestPtr& r, cl_event ev, std::uint32_t implied, RequestList& released);
  // Settles, oldest first, the lane's commands that ended well unobserved (now and then; a few at most).
  void settle_ended(unsigned lane);

  Engine& engine_;
  std::mutex mutex_;
  FlushPolicy flush_policy_;
  std::atomic<std::size_t> backlog_{0};
  bool flush_when_idle_ = true;
  KernelCacheSlot kernel_cache_;  // this controller's slot; its programs carry the slot's build option
  struct LastLaunch {
    cl::Event event;
    unsigned lane = 0;
  };
  std::map<std::string, LastLaunch> last_launch_;  // by kernel name, when launches are chained
  // Per lane, in enqueue order, the commands not yet seen ended. A command nobody waits on is
  // otherwise settled only by the next wait, and until then it holds the one before it (its
  // running_preds, for the fault rules) and its event: a stream of launches without waits grew by
  // 1.4 KiB per request on PoCL 3.1 (tests/test_soak.cpp).
  std::vector<std::deque<RequestPtr>> unobserved_;
  std::vector<unsigned> since_settled_;    // per lane: enqueues since settle_ended last looked
  std::vector<cl_event> spare_wait_list_;  // enqueue_command's, kept between commands
};

}  // namespace hetflow::detail
