// The callback receiver: a device command a host-side consumer waits for has completed (its
// clSetEventCallback fired and the gateway put it here, or a poll or a blocking wait saw it end).
// Records the outcome, which releases the host tasks and waits that depended on it.
#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "engine.hpp"

namespace hetflow::detail {

void Engine::on_device_complete(const RequestPtr& r) {
  const cl_int status = command_status(*r);
  if (status > CL_COMPLETE) return;  // still queued or running (a wait that returned on an error)
  finish_device(*r, status);
}

bool Engine::settle_if_succeeded(const RequestPtr& r) {
  if (!fault_kernel_.empty()) {
    // An injected fault is seen only by a query of its own command: what r waited on is settled
    // first, by its usual observers, so no fault is seen earlier than it would be.
    std::lock_guard lock(r->m);
    for (const auto& p : r->running_preds)
      if (!p->ended()) return false;
  }
  if (command_status(*r) != CL_COMPLETE) return false;
  finish_device(*r, CL_COMPLETE);
  return true;
}

bool Engine::settle_as_ended_well(const RequestPtr& r) {
  if (!fault_kernel_.empty()) return settle_if_succeeded(r);  // an injected fault must be seen per command
  finish_device(*r, CL_COMPLETE);
  return true;
}

bool Engine::settle_running_preds(Request& r, bool ended_well, RequestList& failed) {
  // Every predecessor r waited on has ended by now (the driver ran r after them), but the engine
  // may not have seen how. Their outcomes come first, oldest first, so one that failed cancels r
  // (through its device_dependants) before r could be reported done. Iterative: a long chain of
  // unobserved commands must not become a deep recursion.
  // If r itself ended well, so did everything it waited on: a runtime ends a command whose wait
  // list (or in-order queue) held a failed one with an error (PoCL), or loses the context, which
  // fails every later query (NVIDIA). They are settled as done without a status query each, which
  // costs 1-1.5 us on NVIDIA: a chain of transfers alternating between the copy queues, which no
  // lane's in-order settling can retire alone, paid one per request (perf/RESULTS.md, 2026-11-26
  // 10:46Z). An injected fault is seen only by querying its own command, so there they are asked.
  const bool query_each = !ended_well || !fault_kernel_.empty();
  RequestPtr first;  // the first one not seen ended, usually the only one: no list for it
  RequestList unsettled, stack;
  {
    std::lock_guard lock(r.m);
    for (const auto& p : r.running_preds) {
      if (!p->ended()) {
        if (!first)
          first = p;
        else
          stack.push_back(p);
      } else if (const Status s = p->status.load(std::memory_order_acquire);
                 s == Status::failed || s == Status::cancelled) {
        failed.push_back(p);
      }
    }
  }
  if (!first) return false;
  failed.clear();  // to be looked at again once these are settled
  // The usual case in a stream: one, the other copy queue's last command, and everything it waited
  // on has ended. Settled alone, without the walk's lists: their allocations cost more than the
  // rest of settling it (callgrind, perf/RESULTS.md 2026-11-29).
  if (stack.empty()) {
    bool alone = true;
    {
      std::lock_guard lock(first->m);
      if (first->ended()) return true;
      for (const auto& q : first->running_preds)
        if (!q->ended()) {
          alone = false;
          break;
        }
    }
    if (alone) {
      const cl_int s = query_each ? command_status(*first) : CL_COMPLETE;
      if (s <= CL_COMPLETE) finish_outcome(*first, s);
      return true;
    }
  }
  stack.push_back(std::move(first));
  // A DAG: each request is expanded once, or fan-in makes the walk exponential. A walk is usually a
  // request or two (the other copy queue's last command): those are looked up in `unsettled`
  // itself. A long one (a stream of launches PoCL had not run yet when a wait came: 20,000 of them)
  // marks what it expanded by distance back from r in a bitmap: ids are unique and every
  // predecessor's is below r's. A hash set there cost an allocation per command, more than all the
  // rest of the walk (callgrind, perf/RESULTS.md 2026-11-27 05:24–05:31Z).
  constexpr std::size_t kSearchedInPlace = 16;
  constexpr std::uint64_t kMostMarked = std::uint64_t(1) << 24;  // ids back; the bitmap: 4 MiB at most
  bool marking = false;
  std::vector<std::uint64_t> marked;
  std::unordered_set<const Request*> far;  // predecessors further back than kMostMarked: never seen yet
  const auto mark = [&](const Request* x) {
    const std::uint64_t back = r.id - x->id;
    if (back >= kMostMarked) {
      far.insert(x);
      return;
    }
    if (back / 64 >= marked.size()) marked.resize(std::max<std::size_t>(back / 64 + 1, 2 * marked.size()));
    marked[back / 64] |= std::uint64_t(1) << (back % 64);
  };
  const auto expanded = [&](const Request* x) {
    if (!marking && unsettled.size() <= kSearchedInPlace)
      return std::any_of(unsettled.begin(), unsettled.end(), [x](const RequestPtr& u) { return u.get() == x; });
    if (!marking) {
      marking = true;
      for (const auto& u : unsettled) mark(u.get());
    }
    const std::uint64_t back = r.id - x->id;
    if (back >= kMostMarked) return far.count(x) > 0;
    return back / 64 < marked.size() && (marked[back / 64] >> (back % 64) & 1) != 0;
  };
  // Newest first: every predecessor's id is below its dependant's, so taking the largest id left
  // lists `unsettled` newest to oldest, and it only needs reversing. A stack went down one copy
  // queue's chain before the other's, and sorting what it found cost more than the rest of a
  // request's settling (callgrind, perf/RESULTS.md 2026-11-29).
  const auto older = [](const RequestPtr& a, const RequestPtr& b) { return a->id < b->id; };
  std::make_heap(stack.begin(), stack.end(), older);
  while (!stack.empty()) {
    std::pop_heap(stack.begin(), stack.end(), older);
    RequestPtr p = std::move(stack.back());
    stack.pop_back();
    if (expanded(p.get())) continue;
    std::lock_guard lock(p->m);
    if (p->ended()) continue;
    unsettled.push_back(p);
    if (marking) mark(p.get());
    for (const auto& q : p->running_preds)
      if (!q->ended() && !expanded(q.get())) {
        stack.push_back(q);
        std::push_heap(stack.begin(), stack.end(), older);
      }
  }
  std::reverse(unsettled.begin(), unsettled.end());  // oldest first
  for (const auto& p : unsettled) {
    const cl_int s = query_each ? command_status(*p) : CL_COMPLETE;
    if (s <= CL_COMPLETE) finish_outcome(*p, s);
  }
  return true;
}

void Engine::finish_device(Request& r, cl_int status) {
  // A predecessor that failed cancels r through its device_dependants, but its finish may still be
  // on its way there on another thread: r's outcome follows from theirs here too.
  RequestList failed;  // every one: the failures behind r are kept for its hazard (Engine::is_done)
  if (settle_running_preds(r, status == CL_COMPLETE, failed)) {
    std::lock_guard lock(r.m);
    for (const auto& p : r.running_preds)
      if (const Status s = p->status.load(std::memory_order_acquire); s == Status::failed || s == Status::cancelled)
        failed.push_back(p);
  }
  if (!failed.empty()) {
    cancel_after(r, failed);
    return;
  }
  finish_outcome(r, status);
}

void Engine::cancel_after(Request& r, const RequestList& failed_preds) {
  for (const auto& p : failed_preds) cancel_because(r, *p, p->status.load(std::memory_order_acquire));
  const Request& first = *failed_preds.front();
  finish(r, Status::cancelled, "not run: " + dependency_cause(first, first.status.load()));
}

void Engine::finish_outcome(Request& r, cl_int status) {
  if (status == CL_COMPLETE) {
    finish(r, Status::done);
    return;
  }
  // Runtimes end a command whose wait list (or, PoCL, whose in-order queue) held a failed command
  // with CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST or a bare -1, which is not CL_DEVICE_NOT_FOUND
  // here, whatever the error table says.
  const bool inherited = status == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST || status == -1;
  if (!inherited) note_fault(r, status, "ended with");  // before anyone waiting on r can go on
  finish(r, Status::failed,
         std::string("the OpenCL command ended with ") +
             (status == -1 ? std::string("status -1") : std::string(cl_error_name(status))) +
             (inherited ? " (a command or host task it waited for, or one ahead of it on its in-order queue, failed)"
                        : ""));
}

}  // namespace hetflow::detail
