// Host-task function node: runs a host task (or a tile's release) on a TBB worker once everything
// it depends on is done, or on a thread that waits for it (Engine::run_host_once). An exception fails the request
// and cancels its dependants.
#include <atomic>
#include <string>

#include "engine.hpp"

namespace hetflow::detail {
namespace {
// The host task this thread is running, and whose engine: a blocking call from inside it on the
// same controller would wait for the graph that runs it.
thread_local const Request* running_task = nullptr;
thread_local const Engine* running_engine = nullptr;

// The lane a host task is recorded on: the number of the thread that ran it, among the threads that
// ran one in this process, TBB's workers and the program's waiting threads alike. One lane per
// thread, so no two tasks on a lane overlap: TBB's slot index in the arena named the program's
// waiting threads that ran tasks (several at once) after a worker's slot, and their tasks overlapped
// on one lane of the timeline (a user's trial, 2026-11-29).
int host_thread_number() {
  static std::atomic<int> next{0};
  thread_local const int number = next.fetch_add(1, std::memory_order_relaxed);
  return number;
}
}  // namespace

const Request* Engine::host_task_on_this_thread() const { return running_engine == this ? running_task : nullptr; }
bool Engine::running_any_host_task() { return running_task != nullptr; }

bool running_host_task_on(const TileState& tile) {
  if (!running_task) return false;
  for (const auto& a : running_task->accesses)
    if (a.tile.get() == &tile || a.tile->host_of.get() == &tile) return true;
  return false;
}

void Engine::run_host(const RequestPtr& r) {
  if (recording) {
    r->start_ns = now_ns();
    std::lock_guard lock(r->m);
    r->worker = "host" + std::to_string(host_thread_number());
  }
  std::string error;
  const Request* outer_task = running_task;
  const Engine* outer_engine = running_engine;
  running_task = r.get();
  running_engine = this;
  try {
    if (auto* hook = std::get_if<HookWork>(&r->work))
      hook->fn(outcome_of_predecessors(*r));
    else
      r->host().fn();
  } catch (const std::exception& e) {
    error = std::string("threw: ") + e.what();
    r->exception = std::current_exception();
  } catch (...) {
    error = "threw an exception that is not a std::exception";
    r->exception = std::current_exception();
  }
  // Captured state goes now, not when the last reference does; still as the running task, since
  // it may hold the controller's last reference (~Controller then leaves its end to another thread).
  if (auto* hook = std::get_if<HookWork>(&r->work))
    hook->fn = nullptr;
  else
    r->host().fn = nullptr;
  running_task = outer_task;
  running_engine = outer_engine;
  if (recording) r->end_ns = now_ns();
  const Status outcome = error.empty() ? Status::done : Status::failed;
  finish(*r, outcome, std::move(error));
  receiver_step_.poll_watched();  // a cheap status check while this worker is here anyway
}

Outcome Engine::outcome_of_predecessors(Request& r) {
  Outcome o;
  {
    std::lock_guard lock(r.m);
    o.error = r.cancel_cause;
  }
  return o;
}

}  // namespace hetflow::detail
