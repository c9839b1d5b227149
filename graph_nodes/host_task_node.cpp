// Host-task function node: runs a host task (or a tile's release) on a TBB worker once everything
// it depends on is done. An exception fails the request and cancels its dependants.
#include <tbb/task_arena.h>

#include "engine.hpp"

namespace hetflow::detail {

void Engine::run_host(const RequestPtr& r) {
  if (recording) {
    r->start_ns = now_ns();
    r->worker = "host" + std::to_string(tbb::this_task_arena::current_thread_index());
  }
  std::string error;
  try {
    r->fn();
  } catch (const std::exception& e) {
    error = std::string("threw: ") + e.what();
  } catch (...) {
    error = "threw an exception that is not a std::exception";
  }
  r->fn = nullptr;  // drop captured state now, not when the last reference goes
  if (recording) r->end_ns = now_ns();
  const Status outcome = error.empty() ? Status::done : Status::failed;
  finish(*r, outcome, std::move(error));
  poll_watched();  // a cheap status check while this worker is here anyway
}

}  // namespace hetflow::detail
