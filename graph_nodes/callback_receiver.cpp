// The receiver node's step (callback_receiver.hpp): a device command has ended — its
// clSetEventCallback fired and the gateway put it here, or a poll, a waiting thread or the streaming
// step saw it end. Records the outcome, which releases the host tasks and waits that depended on it.
#include "callback_receiver.hpp"

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "engine.hpp"
#include "log.hpp"

namespace hetflow::detail {

ReceiverStep::ReceiverStep(Engine& engine) : engine_(engine) { hub_->receiver = this; }

void ReceiverStep::detach() {
  std::lock_guard lock(hub_->m);
  hub_->receiver = nullptr;
}

void ReceiverStep::watch(const RequestPtr& p) {
  log_debug("watching #{} '{}'", p->id, p->name);
  {
    std::lock_guard lock(watched_mutex_);
    watched_.push_back(p);
  }
  if (!callbacks_.worth_registering()) {  // the poller and the waiters notice its end
    engine_.streaming_step_.flush_lane(p->lane);
    return;
  }
  auto* token = new Token{hub_, p};
  p->callback.store(Request::Callback::registered, std::memory_order_release);  // it may fire at once
  const cl_int err = clSetEventCallback(p->event.load(), CL_COMPLETE, &on_event, token);
  if (err != CL_SUCCESS) {
    p->callback.store(Request::Callback::none, std::memory_order_release);
    delete token;
    engine_.finish(*p, Status::failed, std::string("clSetEventCallback failed: ") + cl_error_name(err));
    return;
  }
  // The callback can only fire once the command is submitted to the device.
  engine_.streaming_step_.flush_lane(p->lane);
}

void CL_CALLBACK ReceiverStep::on_event(cl_event, cl_int, void* data) {
  // Runs on the OpenCL runtime's thread: hand the completion to the graph and return at once.
  std::unique_ptr<Token> token(static_cast<Token*>(data));
  std::lock_guard lock(token->hub->m);
  if (token->hub->receiver) token->hub->receiver->deliver(token->request);
}

void ReceiverStep::deliver(const RequestPtr& r) {
  // A dropped callback (HETFLOW_DEBUG_DROP_CALLBACKS) tells nothing: the command's end, seen some
  // other way, counts it late (Engine::finish).
  if (drop_callbacks_) return;
  if (judge_callback(*r, true)) engine_.streaming_.gateway().try_put(r);  // else whoever saw it end reported it
}

bool ReceiverStep::judge_callback(Request& r, bool callback_first) {
  auto registered = Request::Callback::registered;
  if (!r.callback.compare_exchange_strong(registered, Request::Callback::judged, std::memory_order_acq_rel))
    return false;  // no callback, or judged already: the end was seen first, or the callback came
  if (callbacks_.arrived(callback_first))
    log().debug("completion callbacks: {} of the first {} came after their command was seen ended: {}",
                callbacks_.late(), CallbackWorth::kJudged,
                callbacks_.worth_registering() ? "still registered" : "no longer registered");
  return true;
}

bool ReceiverStep::poll_watched() {
  RequestList ended;
  {
    std::lock_guard lock(watched_mutex_);
    std::erase_if(watched_, [&](const RequestPtr& r) {
      if (r->ended()) return true;
      if (engine_.command_status(*r) > CL_COMPLETE) return false;
      ended.push_back(r);
      return true;
    });
  }
  for (const auto& r : ended) on_device_complete(r);
  return !ended.empty();
}

RequestList ReceiverStep::watched_on(unsigned lane) {
  RequestList on_lane;
  std::lock_guard lock(watched_mutex_);
  for (const auto& r : watched_)
    if (r->lane == lane && !r->ended()) on_lane.push_back(r);
  return on_lane;
}

void ReceiverStep::on_device_complete(const RequestPtr& r) {
  const cl_int status = engine_.command_status(*r);
  if (status > CL_COMPLETE) return;  // still queued or running (a wait that returned on an error)
  finish_device(*r, status);
}

bool ReceiverStep::settle_if_succeeded(const RequestPtr& r) {
  if (!engine_.fault_kernel_.empty()) {
    // An injected fault is seen only by a query of its own command: what r waited on is settled
    // first, by its usual observers, so no fault is seen earlier than it would be.
    std::lock_guard lock(r->m);
    for (const auto& p : r->running_preds)
      if (!p->ended()) return false;
  }
  if (engine_.command_status(*r) != CL_COMPLETE) return false;
  finish_device(*r, CL_COMPLETE);
  return true;
}

bool ReceiverStep::settle_as_ended_well(const RequestPtr& r) {
  if (!engine_.fault_kernel_.empty()) return settle_if_succeeded(r);  // an injected fault must be seen per command
  finish_device(*r, CL_COMPLETE);
  return true;
}

bool ReceiverStep::settle_running_preds(Request& r, bool ended_well, RequestList& failed) {
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
  const bool query_each = !ended_well || !engine_.fault_kernel_.empty();
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
      const cl_int s = query_each ? engine_.command_status(*first) : CL_COMPLETE;
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
    const cl_int s = query_each ? engine_.command_status(*p) : CL_COMPLETE;
    if (s <= CL_COMPLETE) finish_outcome(*p, s);
  }
  return true;
}

void ReceiverStep::finish_device(Request& r, cl_int status) {
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

void ReceiverStep::cancel_after(Request& r, const RequestList& failed_preds) {
  for (const auto& p : failed_preds) cancel_because(r, *p, p->status.load(std::memory_order_acquire));
  const Request& first = *failed_preds.front();
  engine_.finish(r, Status::cancelled, "not run: " + dependency_cause(first, first.status.load()));
}

void ReceiverStep::finish_outcome(Request& r, cl_int status) {
  if (status == CL_COMPLETE) {
    engine_.finish(r, Status::done);
    return;
  }
  // Runtimes end a command whose wait list (or, PoCL, whose in-order queue) held a failed command
  // with CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST or a bare -1, which is not CL_DEVICE_NOT_FOUND
  // here, whatever the error table says.
  const bool inherited = status == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST || status == -1;
  if (!inherited) engine_.note_fault(r, status, "ended with");  // before anyone waiting on r can go on
  engine_.finish(
      r, Status::failed,
      std::string("the OpenCL command ended with ") +
          (status == -1 ? std::string("status -1") : std::string(cl_error_name(status))) +
          (inherited ? " (a command or host task it waited for, or one ahead of it on its in-order queue, failed)"
                     : ""));
}

}  // namespace hetflow::detail
