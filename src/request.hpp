#pragma once
// One submitted request as the engine carries it through the flow graph.
#include <hetflow/access.hpp>
#include <hetflow/detail/unique_function.hpp>
#include <hetflow/outcome.hpp>
#include <hetflow/program.hpp>
#include <hetflow/range.hpp>
#include <hetflow/record.hpp>
#include <tbb/scalable_allocator.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <condition_variable>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "few_first_list.hpp"

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

// Requests are made on the submitting thread and freed wherever they end (the streaming step, a
// wait, a completion on a TBB worker), a few at a time: a pattern that misses glibc's per-thread
// cache and takes the arena's lock and slow path for most of them (callgrind, perf/RESULTS.md
// 2026-11-25 "Per request"). oneTBB's scalable allocator keeps per-thread pools that take frees
// from other threads. AddressSanitizer sees only malloc's blocks, so its builds keep the default, as
// do builds against a oneTBB without tbbmalloc (CMakeLists.txt).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(HETFLOW_NO_SCALABLE_ALLOCATOR)
template <class T>
using RequestAllocator = std::allocator<T>;
#else
template <class T>
using RequestAllocator = tbb::scalable_allocator<T>;
#endif
// The lists of requests a request keeps (predecessors, waiters, ...) come and go with it.
using RequestList = std::vector<RequestPtr, RequestAllocator<RequestPtr>>;
// A request's tiles: a transfer has one, most launches and host tasks a few; kept inline so a
// transfer allocates nothing for it (src/few_first_list.hpp). Past them, from tbbmalloc: freed in
// batches where the driver's settling ends many at once, glibc's tcache overflowed and a transfer's
// one access cost ~900 instructions of malloc's slow paths (callgrind, perf/RESULTS.md 2026-11-29).
using AccessList = FewFirstList<Access, 1, RequestAllocator<Access>>;

// What a request does, one payload per kind; what every kind shares is Request's own header.
struct TransferWork {};  // H2D, D2H: its one access says what moves where
struct KernelWork {
  Kernel kernel;
  Range range;
  std::vector<KernelArg> args;
};
struct HostWork {  // a host task, or a tile's release (`fn` frees the tile)
  UniqueFunction<void()> fn;
};
// A completion hook (Controller::on_ready): runs whatever its predecessors' outcome, and is told it.
struct HookWork {
  UniqueFunction<void(const Outcome&)> fn;
};
// wait(t), wait_all(), or under sync the wait on explicit requests. Built in place (not movable).
struct WaitWork {
  RequestList on;                   // explicit requests (sync policy)
  std::shared_ptr<TileState> tile;  // wait(t); null with `on` empty: wait_all
  RequestList device_preds;         // under m: device commands still pending at arming
  // Under m: every predecessor has ended. The waiting thread sleeps on the condition variable
  // between its polls (Engine::wait_request).
  bool released = false;
  std::condition_variable released_cv;
  // Under m: while the waiting thread runs graph tasks in its arena until released (Engine::park),
  // the one task its task_group waits for, never run: destroying it ends that wait. The release
  // does (Engine::ready), and so does a device command of the wait's being enqueued, so that the
  // thread goes back to blocking on it (Engine::wake_parked).
  tbb::task_handle wake;
  // Under m: the host requests this wait waits for directly (host tasks, hooks, releases), which
  // a thread other than the engine's maker runs itself once they are ready (Engine::sleep_until_woken).
  RequestList host_preds;
  // Under m: a thread other than the engine's maker sleeps on released_cv until the release, one of
  // its device commands being enqueued (Engine::wake_parked) or one of its host_preds becoming
  // ready (Engine::ready) sets this.
  bool woken = false;
};
using Work = std::variant<TransferWork, KernelWork, HostWork, HookWork, WaitWork>;

// A device request's progress through the streaming step; only that (serial) step reads or writes it.
enum class DeviceStage : std::uint8_t {
  dispatched,  // not yet seen by the streaming step
  held,        // its device predecessors counted; waits for them to end or be enqueued
  enqueued,    // its command is with the driver (`event` is set)
};
// Whether a host-side consumer needs this device command's completion callback; under m.
enum class Watch : std::uint8_t { none, requested, registered };

struct Request : std::enable_shared_from_this<Request> {
  // Built through make_request, so kind and payload agree.
  template <class W, class... Args>
  Request(Kind k, std::string n, std::in_place_type_t<W> w, Args&&... args)
      : kind(k), name(std::move(n)), work(w, std::forward<Args>(args)...) {
    check_payload();
    live.fetch_add(1, std::memory_order_relaxed);
  }
  ~Request();
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Identity.
  std::uint64_t id = 0;
  const Kind kind;
  std::string name;
  unsigned lane = 0;            // device requests: the queue index
  std::uint32_t flow_node = 0;  // the program's flow-graph node or loop that made it (FlowTopology), if any
  AccessList accesses;

  Work work;
  // A hook or host task waiting on device commands keeps the completion poller awake: set while
  // arming (before it can run), taken back by whichever comes first of ready() and finish().
  // NVIDIA's completion callbacks come 17 ms late after a 0.24 ms kernel (tools/drivers/notice_probe.c,
  // perf/RESULTS.md 2026-11-25), so without the poller a host task after a D2H waited for some
  // other thread's poll.
  std::atomic<bool> holds_poller{false};
  // True for whichever of ready() and finish() takes the hold back first. Loaded before the exchange:
  // most requests never held it, and an exchange is a locked instruction.
  bool take_poller_hold() {
    return holds_poller.load(std::memory_order_acquire) && holds_poller.exchange(false, std::memory_order_acq_rel);
  }
  KernelWork& kernel() { return std::get<KernelWork>(work); }
  const KernelWork& kernel() const { return std::get<KernelWork>(work); }
  HostWork& host() { return std::get<HostWork>(work); }
  HookWork& hook() { return std::get<HookWork>(work); }
  WaitWork& wait() { return std::get<WaitWork>(work); }
  bool is_hook() const { return std::holds_alternative<HookWork>(work); }
  void check_payload() const;  // throws std::logic_error if `work` is not one of `kind`'s

  // Dependencies. `preds` is set by the dispatcher and consumed by the streaming step or the arming
  // of host-side requests: deduplicated, not known complete at dispatch (device requests: their
  // device predecessors only).
  RequestList preds;
  // The predecessors whose writes this request reads (`reads`: a RAW edge on some image; a hook's
  // launches too) or only overwrites (WAW), by id: ids are never reused, and these outlive `preds`.
  // Only the failure of one it reads cancels it; one it overwrites may hide a failure under its
  // write (cancel_if_dependent). A predecessor that only read what it writes (WAR) is in neither.
  // Set before the request is shared.
  struct WrittenBefore {
    std::uint64_t id;
    bool reads;
  };
  // Nearly every request writes after one or two others: kept inline (src/few_first_list.hpp).
  using WrittenBeforeList = FewFirstList<WrittenBefore, 3>;
  WrittenBeforeList written_before;
  const WrittenBefore* written_by(const Request& p) const {
    for (const auto& w : written_before)
      if (w.id == p.id) return &w;
    return nullptr;
  }
  std::string cancel_cause;  // under m; non-empty: a predecessor it depends on failed; do not run
  // Set, under m, once cancel_cause is: the streaming step looks at it for every command, and takes
  // m only where there is something to read (a lock pair a command).
  std::atomic<bool> cancel_noted{false};
  std::string failure;  // under m; a device request the driver refused: why (Engine::end_after_preds)
  // Device requests are enqueued only once nothing they wait for runs on the host: every host
  // predecessor has ended (and succeeded; else the request is cancelled) and every device
  // predecessor is enqueued (docs/architecture.md, "Host → device edges"). So no OpenCL command
  // ever waits on an event the engine could fail, and every enqueued command completes without
  // the host's help.
  std::atomic<int> enqueue_unmet{0};  // predecessors still to end or be enqueued, +1 while arming
  // Device requests waiting for this one to end (a host request) or be enqueued (a device
  // request); under m. If it fails first they are cancelled, once their other predecessors have ended.
  RequestList held;
  // Host-side consumers (host tasks, hooks, waits, and device requests that will not run): the
  // predecessors still to complete (+1 while arming), and, on a predecessor, the consumers to
  // release at its completion (under m).
  std::atomic<int> unmet{0};
  RequestList waiters;

  // Device side.
  DeviceStage stage = DeviceStage::dispatched;
  std::atomic<cl_event> event{nullptr};  // written by the streaming step before anyone can need it
  Watch watch = Watch::none;
  // Its completion callback, for the engine's verdict on them (src/callback_worth.hpp): whichever
  // comes first, the callback or the engine seeing the command end another way, takes it from
  // `registered` to `judged` and says which came first.
  enum class Callback : std::uint8_t { none, registered, judged };
  std::atomic<Callback> callback{Callback::none};
  // Device commands whose wait list holds this request's event (under m). If this request fails,
  // OpenCL terminates them; the engine marks them cancelled itself, because not every runtime fires
  // completion callbacks for commands that ended in error (PoCL 3.1 does not).
  // Nearly always one: the next command on the other copy queue, or the next launch.
  using DependantList = FewFirstList<RequestPtr, 1, RequestAllocator<RequestPtr>>;
  DependantList device_dependants;
  // The other side: the predecessors in r's own wait list that had not ended at its enqueue (under
  // m). r's outcome is settled only after theirs (ReceiverStep::finish_device): a command that ran after
  // one that faulted may itself report success over garbage.
  RequestList running_preds;

  // Outcome. `status` leaves `pending` once, under m, as the last step of Engine::finish: whoever
  // sees it ended (ended(), lock-free) may count on the rest of the outcome being in place.
  std::mutex m;
  std::atomic<Status> status{Status::pending};
  bool ended() const { return status.load(std::memory_order_acquire) != Status::pending; }
  std::string error;             // under m
  std::exception_ptr exception;  // host tasks: what fn threw
  // A failed request stays a hazard (its dependants are cancelled) until a wait has reported it.
  std::atomic<bool> reported{false};
  // Host requests: set once it is ready to run (Engine::ready); whoever exchanges `claimed` first,
  // the host node's task or a thread that waits for it, runs it (Engine::run_host_once).
  std::atomic<bool> ready_to_run{false};
  std::atomic<bool> claimed{false};
  // The failed requests behind the predecessors it read or overwrote that ended badly (under m),
  // those behind its cancellation first: a failed or cancelled request stays a hazard until they are
  // reported too (Engine::is_done). Its write may have made the tracker forget their accesses, and
  // what reads there next would get data they never wrote — also when it only overwrote them (WAW)
  // and was cancelled or failed for another reason. Made only once such a predecessor ended badly, and dropped
  // when the request succeeds (its writes then stand): the others do not pay its size (a soak keeps
  // 10^5 requests in flight).
  std::unique_ptr<std::vector<std::weak_ptr<Request>>> failures_behind;
  // What an ended request no longer needs but would keep for as long as something holds the request:
  // its tiles (a tile's buffers live while any request holds it), a task's captures, a wait's tile
  // and the requests it waited on. A failure waits to be reported, a done command to be settled in
  // its queue's list (up to 16 of them, each holding a dropped 128 MB tile), and a recording
  // controller keeps every request, waits included: records need only names, ids, times and edges.
  // Taken under m as it ends, once nothing on the device may still use them (Engine::finish); the
  // caller destroys them after letting go of m, since a tile's last reference unmaps it and
  // captures run user code.
  struct Leftovers {
    AccessList accesses;
    std::vector<KernelArg> args;
    UniqueFunction<void()> task;
    std::shared_ptr<TileState> tile;  // a wait's
    RequestList requests;             // a wait's: `on`, `device_preds`, `host_preds`
  };
  void take_leftovers(Leftovers& into);  // `into`: empty; filled in place, no temporary to destroy

  // Recording (dumps, traces).
  // Written by whoever runs or enqueues the request while records() may read them from any thread
  // (a program may dump while hooks still run): atomics; `worker` under `m`.
  std::int64_t submit_ns = -1;  // before the request is shared
  std::atomic<std::int64_t> start_ns{-1}, end_ns{-1}, enqueue_ns{-1};
  std::string worker;             // host tasks: which worker ran it; under `m`
  std::vector<EdgeRecord> edges;  // under `m`

  // Requests alive in the process: what the leak tests watch (a request kept alive keeps its
  // tiles' buffers and its OpenCL event too).
  static inline std::atomic<long> live{0};
};

// A request of kind `k` with its payload W built from `args`.
template <class W, class... Args>
RequestPtr make_request(Kind k, std::string name, Args&&... args) {
  return std::allocate_shared<Request>(RequestAllocator<Request>{}, k, std::move(name), std::in_place_type<W>,
                                       std::forward<Args>(args)...);
}

// Why a dependant of `p` is not run: "request #12 'fill' that it depends on failed"; for a
// cancelled p, also the failure behind it, which a wait on another tile may be the one to report
// (", behind it request #3 'load' that failed"). Called without p.m held: it takes it.
std::string dependency_cause(const Request& p, Status s);

// The failed requests that a dependant of p, which ended with s, has behind it: p itself if it
// failed, and those behind p (Request::failures_behind). Called without p.m held: it takes it.
inline std::vector<std::weak_ptr<Request>> failures_through(Request& p, Status s) {
  std::vector<std::weak_ptr<Request>> behind;
  if (s == Status::failed) behind.push_back(p.weak_from_this());
  if (s != Status::failed && s != Status::cancelled) return behind;
  std::lock_guard lock(p.m);
  if (p.failures_behind)
    for (const auto& b : *p.failures_behind) behind.push_back(b);
  return behind;
}

// Adds `behind` to r's failures_behind (under r.m), each once; `causes` puts them first, where
// dependency_cause looks for the failure to name.
inline void add_failures_behind(Request& r, std::vector<std::weak_ptr<Request>> behind, bool causes) {
  if (behind.empty()) return;
  if (!r.failures_behind) r.failures_behind = std::make_unique<std::vector<std::weak_ptr<Request>>>();
  auto& mine = *r.failures_behind;
  const auto same = [](const std::weak_ptr<Request>& x, const std::weak_ptr<Request>& y) {
    return !x.owner_before(y) && !y.owner_before(x);
  };
  std::size_t first_other = 0;  // with `causes`: where the failures not placed by this call begin
  for (auto& b : behind) {
    auto at = std::find_if(mine.begin(), mine.end(), [&](const std::weak_ptr<Request>& x) { return same(x, b); });
    if (!causes) {
      if (at == mine.end()) mine.push_back(std::move(b));
      continue;
    }
    if (at != mine.end()) {
      if (std::size_t(at - mine.begin()) < first_other) continue;
      mine.erase(at);
    }
    mine.insert(mine.begin() + std::ptrdiff_t(first_other++), std::move(b));
  }
}

// r is not run because its predecessor p ended with s (failed or cancelled; pending: never
// enqueued): keeps the first cause, and adds the failed requests behind p (p itself, or those behind
// a cancelled p) to r's. Called without p.m or r.m held: it takes each in turn.
inline void cancel_because(Request& r, Request& p, Status s) {
  auto behind = failures_through(p, s);
  std::string cause = dependency_cause(p, s);
  std::lock_guard lock(r.m);
  const bool first_cause = r.cancel_cause.empty();
  if (first_cause) r.cancel_cause = std::move(cause);
  r.cancel_noted.store(true, std::memory_order_release);
  add_failures_behind(r, std::move(behind), first_cause);
}

// r's predecessor p ended with s (failed or cancelled). If r reads what p wrote, r is cancelled
// (cancel_because) and this returns true. Otherwise r only overwrites what p read or wrote and
// still runs, after p; where it overwrites p's writes it keeps the failures behind p, which its
// write may hide from the tracker (Request::failures_behind). Called without p.m or r.m held.
inline bool cancel_if_dependent(Request& r, Request& p, Status s) {
  const Request::WrittenBefore* written = r.written_by(p);
  if (written && written->reads) {
    cancel_because(r, p, s);
    return true;
  }
  if (!written) return false;
  auto behind = failures_through(p, s);
  std::lock_guard lock(r.m);
  add_failures_behind(r, std::move(behind), false);
  return false;
}

}  // namespace hetflow::detail
