#pragma once
// One submitted request as the engine carries it through the flow graph.
#include <hetflow/access.hpp>
#include <hetflow/detail/unique_function.hpp>
#include <hetflow/outcome.hpp>
#include <hetflow/program.hpp>
#include <hetflow/range.hpp>
#include <hetflow/record.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <condition_variable>
#include <string>
#include <vector>

namespace hetflow::detail {

enum class Kind : std::uint8_t { h2d, d2h, kernel, host, wait, release };
enum class Status : std::uint8_t { pending, done, failed, cancelled };

inline const char* to_string(Kind k) {
  switch (k) {
    case Kind::h2d:
      return "H2D";
    case Kind::d2h:
      return "D2H";
    case Kind::kernel:
      return "kernel";
    case Kind::host:
      return "host";
    case Kind::wait:
      return "wait";
    case Kind::release:
      return "free";
  }
  return "?";
}
inline const char* to_string(Status s) {
  switch (s) {
    case Status::pending:
      return "pending";
    case Status::done:
      return "done";
    case Status::failed:
      return "failed";
    case Status::cancelled:
      return "cancelled";
  }
  return "?";
}
inline bool on_device(Kind k) { return k == Kind::h2d || k == Kind::d2h || k == Kind::kernel; }

struct Request;
using RequestPtr = std::shared_ptr<Request>;

struct Request : std::enable_shared_from_this<Request> {
  std::uint64_t id = 0;
  Kind kind = Kind::host;
  std::string name;
  unsigned lane = 0;            // device requests: the queue index
  std::uint32_t flow_node = 0;  // the program's flow-graph node or loop that made it (FlowTopology), if any

  // What it does.
  std::vector<Access> accesses;
  Kernel kernel;
  std::optional<Range> range;
  std::vector<KernelArg> args;
  UniqueFunction<void()> fn;  // host tasks; for `release`, what frees the tile
  // Completion hooks (Controller::on_ready): host requests that run whatever their predecessors'
  // outcome, and are told it.
  std::function<void(const Outcome&)> hook;
  bool holds_poller = false;             // a hook waiting on device commands keeps the completion poller awake
  std::vector<RequestPtr> wait_for;      // wait requests on explicit requests (sync policy)
  std::shared_ptr<TileState> wait_tile;  // wait(t): the tile; null with empty wait_for = wait_all

  // Set by the dispatcher, consumed by the streaming node or the arming of host-side requests.
  std::vector<RequestPtr> preds;  // deduplicated, not known complete at dispatch (device requests:
                                  // their device predecessors only)
  std::string cancel_cause;       // non-empty: a predecessor failed; do not run
  std::string failure;            // device requests the driver refused: why (Engine::end_after_preds)

  // Device requests are enqueued only once nothing they wait for runs on the host: every host
  // predecessor has ended (and succeeded; else the request is cancelled) and every device
  // predecessor is enqueued (docs/architecture.md, "Host → device edges"). So no OpenCL command
  // ever waits on an event the engine could fail, and every enqueued command completes without
  // the host's help.
  std::atomic<int> enqueue_unmet{0};  // predecessors still to end or be enqueued, +1 while arming
  bool streaming_armed = false;       // the streaming node has counted its device predecessors

  // Device side (written by the streaming node before anyone can read it through `finished`).
  std::atomic<cl_event> event{nullptr};

  // Completion, guarded by `m`.
  std::mutex m;
  bool finished = false;
  bool watch_requested = false;     // a host-side consumer needs the completion callback
  bool watched = false;             // the callback is registered
  std::vector<RequestPtr> waiters;  // host-side consumers to release at completion
  // Device requests waiting for this one to end (a host request) or be enqueued (a device
  // request). If it fails first they are cancelled, once their other predecessors have ended.
  std::vector<RequestPtr> held;
  bool launched = false;  // device requests: enqueued, `held` released
  // Device commands whose wait list holds this request's event. If this request fails, OpenCL
  // terminates them; the engine marks them cancelled itself, because not every runtime fires
  // completion callbacks for commands that ended in error (PoCL 3.1 does not).
  std::vector<RequestPtr> device_dependants;
  // The other side: the predecessors in r's own wait list that had not ended at its enqueue. r's
  // outcome is settled only after theirs (Engine::finish_device): a command that ran after one
  // that faulted may itself report success over garbage.
  std::vector<RequestPtr> running_preds;
  std::atomic<Status> status{Status::pending};
  std::atomic<bool> done_flag{false};  // lock-free read of `finished`
  // A failed request stays a hazard (its dependants are cancelled) until a wait has reported it.
  std::atomic<bool> reported{false};
  std::string error;
  std::exception_ptr exception;  // host tasks: what fn threw

  // Host-side consumers: predecessors still to complete (+1 while arming).
  std::atomic<int> unmet{0};
  // Wait requests: set, under `m`, when every predecessor is done; the waiting thread sleeps on
  // the condition variable between its polls (Engine::wait_request).
  bool released = false;
  std::condition_variable released_cv;
  std::vector<RequestPtr> device_preds;  // wait requests: device commands still pending at arming

  // Recording (dumps, traces).
  // Written by whoever runs or enqueues the request while records() may read them from any thread
  // (a program may dump while hooks still run): atomics; `worker` under `m`.
  std::int64_t submit_ns = -1;  // before the request is shared
  std::atomic<std::int64_t> start_ns{-1}, end_ns{-1}, enqueue_ns{-1};
  std::string worker;             // host tasks: which worker ran it; under `m`
  std::vector<EdgeRecord> edges;  // under `m`

  Request() { live.fetch_add(1, std::memory_order_relaxed); }
  ~Request();
  // Requests alive in the process: what the leak tests watch (a request kept alive keeps its
  // tiles' buffers and its OpenCL event too).
  static inline std::atomic<long> live{0};
};

// Why a dependant of `p` is not run: "request #12 'fill' that it depends on failed".
inline std::string dependency_cause(const Request& p, Status s) {
  return "request #" + std::to_string(p.id) + " '" + p.name + "' that it depends on " +
         (s == Status::pending ? std::string("was never enqueued") : std::string(to_string(s)));
}
// Records the first cause of r's cancellation (under r.m: several predecessors may fail at once).
inline void cancel_because(Request& r, std::string cause) {
  std::lock_guard lock(r.m);
  if (r.cancel_cause.empty()) r.cancel_cause = std::move(cause);
}

}  // namespace hetflow::detail
