// The engine's waits (docs/architecture.md, "The flow of a request", step 6): wait(t), wait_all(), a blocking request
// under sync, a loop's wait for its launches and max_in_flight's hold-back, each a wait request the dispatcher orders
// after what it waits for; how the waiting thread spends the time (blocked on a device command's event, parked in the
// graph's arena, helping run the graph, or asleep); and the failures kept until a wait reports them.
#include <tbb/flow_graph.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "arena_park.hpp"
#include "driver_lock.hpp"
#include "engine.hpp"
#include "log.hpp"

namespace hetflow::detail {

void Engine::wait_for_launches(const RequestList& launches) {
  RequestList here;
  for (const auto& p : launches)
    if (launched_here(*p)) here.push_back(p);
  wait_for(here, "sync(launches)");
}

void Engine::wait_for(const RequestList& requests, std::string name) {
  auto w = make_request<WaitWork>(Kind::wait, std::move(name));
  for (const auto& p : requests)
    if (!p->ended()) w->wait().on.push_back(p);
  if (w->wait().on.empty()) return;
  wait_request(std::move(w));
}

void Engine::hold_back(std::size_t seen) {
  // Everything before it, as a wait_all: the device and the host tasks keep working through what
  // is queued meanwhile, and one wait per max_in_flight requests costs a stream little. Failures
  // stay for the program's own waits.
  auto w = make_request<WaitWork>(
      Kind::wait, "held back: " + std::to_string(seen) + " requests in flight (ControllerOptions::max_in_flight)");
  wait_request(std::move(w));
}

void Engine::wait_request(RequestPtr w) {
  // `w` stays owned here: once released, nothing else may hold it, and the loop below still reads
  // its flag and condition variable.
  WaitWork& raw = w->wait();
  submit(w);
  // Where the wait needs a device command that is enqueued, the thread blocks in clWaitForEvents:
  // NVIDIA's callbacks come late and a sleep would add to every blocking request under the sync
  // policy (perf/bench_overhead, sync row). Otherwise what it waits for needs the graph's tasks
  // (host tasks, or device commands not yet enqueued): the thread that made the controller runs
  // them until its wait is released (park). Any other thread helps run the graph's pending tasks
  // (graph_.wait_for_all() returns once the graph is idle, and the graph's context has
  // concurrent_wait so that is safe while others put messages), which also keeps progress from
  // depending on a TBB worker waking up — seen stalled with oneTBB 2021.8 when only an external
  // thread had put work. Then it checks the device commands it waits for, because callbacks can
  // arrive milliseconds late (NVIDIA) or, for failed commands, never (PoCL). Sleeps back off from
  // 50 us to 400 us; a prompt completion wakes it.
  std::unique_lock lock(w->m);
  auto interval = std::chrono::microseconds(50);
  while (!raw.released) {
    // First the device command, if one is enqueued: usually the wait needs nothing else (the
    // submitting thread ran the steps itself, Engine::submit), and blocking in the driver is the
    // shortest way back.
    if (RequestPtr p = blocking_candidate(raw)) {
      lock.unlock();
      const cl_int err = block_on_enqueued(p);
      lock.lock();
      // Any other error leaves the command running: help, poll and sleep as below rather than spin.
      if (err == CL_SUCCESS || err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) continue;
    }
    lock.unlock();
    if (park(*w)) {
      lock.lock();
      continue;
    }
    // One helper at a time: graph::wait_for_all() writes the graph's own flags on return, so two
    // threads in it at once race (ThreadSanitizer); the others sleep below while one helps.
    help_run_graph();
    receiver_step_.poll_watched();
    lock.lock();
    if (raw.released) break;
    if (blocking_candidate(raw)) continue;  // enqueued meanwhile: block on it above
    raw.released_cv.wait_for(lock, interval, [&raw] { return raw.released; });
    interval = std::min(interval * 2, std::chrono::microseconds(400));
  }
}

cl_int Engine::block_on_enqueued(const RequestPtr& p) {
  cl_event ev = p->event.load();  // p, alive here, keeps its event
  cl_int err = CL_SUCCESS;
  if (!ended_within(ev, std::chrono::microseconds(50))) {
    auto driver = driver_lock();
    err = clWaitForEvents(1, &ev);
  }
  receiver_step_.on_device_complete(p);  // reads the command's own status, failures included
  return err;
}

bool Engine::look_at(const RequestPtr& p) {
  if (p->ended()) return true;
  // Still queued, submitted or running; a failing query (negative) is the driver reporting a fault: ended.
  const cl_int status = command_status(*p);
  if (status > CL_COMPLETE) return false;
  receiver_step_.finish_device(*p, status);  // the status just read: failures included
  return true;
}

namespace {
// A waiting thread counted in parked_ for as long as it waits (Engine::park, sleep_until_woken).
struct CountedIn {
  std::atomic<unsigned>& n;
  explicit CountedIn(std::atomic<unsigned>& count) : n(count) { n.fetch_add(1); }
  ~CountedIn() { n.fetch_sub(1); }
  CountedIn(const CountedIn&) = delete;
  CountedIn& operator=(const CountedIn&) = delete;
};
}  // namespace

bool Engine::park(Request& w) {
  // graph_.wait_for_all(), the way to run graph tasks before, returns only once the whole graph is
  // idle: a wait for a quick host task took as long as an unrelated one that ran beside it (5 s, or
  // for ever if that task waited for the program's thread; tests/test_threads_and_lifetimes.cpp).
  // Parked (src/arena_park.hpp), the thread runs the arena's tasks until the wait's release, or one
  // of its device commands being enqueued (the streaming step), destroys the wake handle; then it
  // blocks on that command instead. It parks in its own arena, the graph's for the engine's maker.
  if (!parks_here()) {
    // With no worker (one thread allowed), a thread that does not help leaves the tasks to nobody.
    if (graph_threads_ < 2) return false;
    sleep_until_woken(w);
    return true;
  }
  WaitWork& raw = w.wait();
  ArenaPark parking;
  // Counted in before looking (both sequentially consistent, as the streaming step's store of the
  // event and its look at the count): a command enqueued after the look wakes this wait.
  const CountedIn counted(parked_);
  {
    std::lock_guard own(w.m);
    if (raw.released || blocking_candidate(raw)) return true;
    raw.wake = parking.wake();
  }
  // Callbacks may come late or (PoCL, a failed command) never: the completion poller checks
  // meanwhile, as the thread itself would have between its sleeps.
  poller_.hold();
  parking.wait();
  poller_.release();
  return true;
}

void Engine::sleep_until_woken(Request& w) {
  // Helping, as this thread did before, meant graph::wait_for_all(): from outside the graph's arena
  // with its slots taken, oneTBB hands that to a worker and returns once the whole graph is idle, so
  // a wait for a quick host task took as long as an unrelated 2 s one beside it
  // (tests/test_threads_and_lifetimes.cpp). Entering the arena to park is no better: with every slot
  // taken the park is handed to a worker too. The graph's workers run its tasks; this thread runs
  // the host requests its wait waits for directly once they are ready (its TBB workers may all be
  // busy: 2 cores give one, and a quick host task waited behind an unrelated long one while the
  // waiting thread slept with its core free), and otherwise sleeps until one is, its wait is
  // released or one of its device commands is enqueued. Only its own: an unrelated task may wait
  // for what this thread does after its wait (tests/test_queue_order.cpp), and one its wait waits
  // for cannot.
  WaitWork& raw = w.wait();
  const CountedIn counted(parked_);  // as in park(): ready() and the streaming step wake it
  RequestPtr runnable;
  {
    std::lock_guard own(w.m);
    if (raw.released || blocking_candidate(raw)) return;
    raw.woken = false;  // before looking: a request made ready after the look wakes it
    std::erase_if(raw.host_preds, [](const RequestPtr& p) { return p->ended(); });
    for (const auto& p : raw.host_preds)
      if (p->ready_to_run.load() && !p->claimed.load()) {
        runnable = p;
        break;
      }
  }
  if (runnable) {
    run_host_once(runnable);
    return;
  }
  std::unique_lock own(w.m);
  // Callbacks may come late or (PoCL, a failed command) never: the completion poller checks meanwhile.
  poller_.hold();
  raw.released_cv.wait(own, [&raw] { return raw.released || raw.woken; });
  own.unlock();
  poller_.release();
}

void Engine::wake_parked(Request& w) {
  tbb::task_handle wake;
  {
    std::lock_guard own(w.m);
    wake = std::move(w.wait().wake);
    w.wait().woken = true;
  }
  w.wait().released_cv.notify_all();
}

void Engine::help_run_graph() {
  if (auto helping = try_to_help()) run_graph_tasks();
}

bool Engine::ended_within(cl_event ev, std::chrono::microseconds spin) {
  // A short command ends within microseconds, while a thread blocked in clWaitForEvents may take
  // tens of them to wake (PoCL 3.1: ~40 us, perf/RESULTS.md "Blocking requests"), so the waiting
  // thread first watches the status for a moment, yielding its core to the runtime's own threads.
  const auto until = std::chrono::steady_clock::now() + spin;
  do {
    cl_int status = CL_QUEUED;
    // A failing query is the driver reporting a fault (Engine::command_status): ended.
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS)
      return true;
    if (status <= CL_COMPLETE) return true;
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

RequestPtr Engine::blocking_candidate(WaitWork& w) {
  // Called with the wait request's m held.
  std::erase_if(w.device_preds, [](const RequestPtr& p) { return p->ended(); });
  // Every enqueued command completes without the host's help (nothing enqueued waits on a host
  // request), so any of them is safe to block on.
  for (const auto& p : w.device_preds)
    if (p->event.load()) return p;
  return nullptr;
}

void Engine::record_failure(Request& r, Status s) {
  Failure f;
  f.report.id = r.id;
  f.report.kind = to_string(r.kind);
  f.report.name = r.name;
  f.report.cancelled = s == Status::cancelled;
  f.report.cause = r.error;
  f.report.exception = r.exception;
  for (const auto& a : r.accesses) {
    f.tiles.push_back(a.tile->id);
    if (std::find(f.report.tiles.begin(), f.report.tiles.end(), a.tile->name) == f.report.tiles.end())
      f.report.tiles.push_back(a.tile->name);
  }
  f.request = r.shared_from_this();
  // Not a warning: the program is told by the wait that takes it (RequestFailed), a flow node's
  // message or a hook's Outcome, and may handle it (tester 7: every caught failure printed a
  // warning). One never taken is logged as an error when the controller ends (wait_until_quiet).
  log().info("request #{} {} '{}' {}: {}", r.id, f.report.kind, r.name, to_string(s), r.error);
  std::lock_guard lock(failures_mutex_);  // after r.m, never before it
  failures_.push_back(std::move(f));
}

void Engine::report_waited(std::vector<Failure> fs) const {
  std::vector<FailedRequest> reports;
  reports.reserve(fs.size());
  for (auto& f : fs) reports.push_back(std::move(f.report));
  // A fault shows only in its command's status, so the wait that reads it is often the first to know
  // the context is gone: it says so itself (DeviceLost, with what it reports), where a RequestFailed
  // would invite a retry that only the next call refuses.
  throw_if_lost(std::move(reports));
  if (!reports.empty()) throw RequestFailed(std::move(reports));
}

void Engine::wait_tile(const std::shared_ptr<TileState>& tile) {
  refuse_blocking_inside_host_task("wait(" + tile->name + ")");
  // Again while host tasks or hooks submitted more on the tile meanwhile: those are what the tasks
  // it waited for went on to do (tests/test_threads_and_lifetimes.cpp).
  for (;;) {
    const std::uint64_t nested = tile->nested_submits.load(std::memory_order_acquire);
    auto w = make_request<WaitWork>(Kind::wait, "wait(" + tile->name + ")");
    w->wait().tile = tile;
    wait_request(w);
    if (tile->nested_submits.load(std::memory_order_acquire) == nested) break;
  }
  report_waited(take_failures(tile.get()));
}

void Engine::wait_all() {
  refuse_blocking_inside_host_task("wait_all()");
  // Again while host tasks or hooks submitted more meanwhile, as wait_tile.
  for (;;) {
    const std::uint64_t nested = nested_submits_.load(std::memory_order_acquire);
    auto w = make_request<WaitWork>(Kind::wait, "wait_all");
    wait_request(w);
    if (nested_submits_.load(std::memory_order_acquire) != nested) continue;
    std::lock_guard lock(submit_mutex_);
    if (next_id_ == w->id + 1) quiet_at_id_ = next_id_;
    break;
  }
  report_waited(take_failures(nullptr));
}

void Engine::wait_until_quiet() {
  for (;;) {
    std::uint64_t wait_id;  // the id the wait below will take, unless another submission comes first
    {
      std::lock_guard lock(submit_mutex_);
      if (next_id_ == quiet_at_id_) return;  // the program's own wait_all() was the last request
      wait_id = next_id_;
    }
    try {
      wait_all();
    } catch (const DeviceLost&) {
      return;  // ~Engine says so once; every later wait would only repeat it
    } catch (const std::exception& e) {
      std::lock_guard lock(submit_mutex_);
      // A wait refused before it was submitted would be refused again: going round would spin for good.
      if (next_id_ == wait_id) {
        log().error("controller ended without waiting for its requests: {}", e.what());
        return;
      }
      // Failures no wait of the program took: said here, as an error, since as they happened they
      // were logged at info only (record_failure).
      log().error("controller ended with failed requests no wait reported: {}", e.what());
    }
    std::lock_guard lock(submit_mutex_);
    if (next_id_ == wait_id + 1) return;  // nothing but the wait itself was submitted
  }
}

std::vector<Engine::Failure> Engine::take_failures(const TileState* tile) {
  std::lock_guard lock(failures_mutex_);
  auto concerns_tile = [&](const Failure& f) {
    return !tile || std::find(f.tiles.begin(), f.tiles.end(), tile->id) != f.tiles.end();
  };
  // Failures of other tiles stay, in order, for their own wait.
  auto first_taken =
      std::stable_partition(failures_.begin(), failures_.end(), [&](const Failure& f) { return !concerns_tile(f); });
  std::vector<Failure> taken(std::make_move_iterator(first_taken), std::make_move_iterator(failures_.end()));
  failures_.erase(first_taken, failures_.end());
  for (auto& f : taken) {
    f.request->reported.store(true, std::memory_order_release);
    f.request.reset();
  }
  return taken;
}

}  // namespace hetflow::detail
