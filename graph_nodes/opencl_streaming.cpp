// The OpenCL streaming node's step (opencl_streaming.hpp). Completion comes back, only where a
// host-side consumer asked for it, through clSetEventCallback and the async_node's gateway. Queues
// are flushed when something needs their commands on the device, not after each.
#include "opencl_streaming.hpp"

#include <algorithm>
#include <optional>

#include "driver_lock.hpp"
#include "engine.hpp"
#include "log.hpp"

namespace hetflow::detail {
namespace {

bool contiguous(const Box& b, const Extent& e) {
  if (b.size[1] == 1 && b.size[2] == 1) return true;  // part of one row
  if (b.size[0] != e.x) return false;                 // rows are cut
  return b.size[2] == 1 || b.size[1] == e.y;          // whole rows of one slice, or whole slices
}

cl_int enqueue_transfer(cl_command_queue q, bool to_device, const Access& a, cl_uint n, const cl_event* list,
                        cl_event* ev) {
  const TileState& t = *a.tile;
  const Box& b = a.box;
  const std::size_t es = t.elem_size;
  auto* host = static_cast<char*>(t.host);
  if (contiguous(b, t.extent)) {
    const std::size_t offset = (b.offset[0] + t.extent.x * (b.offset[1] + t.extent.y * b.offset[2])) * es;
    const std::size_t bytes = b.count() * es;
    return to_device ? clEnqueueWriteBuffer(q, t.device_buffer(), CL_FALSE, offset, bytes, host + offset, n, list, ev)
                     : clEnqueueReadBuffer(q, t.device_buffer(), CL_FALSE, offset, bytes, host + offset, n, list, ev);
  }
  const std::size_t origin[3] = {b.offset[0] * es, b.offset[1], b.offset[2]};
  const std::size_t region[3] = {b.size[0] * es, b.size[1], b.size[2]};
  const std::size_t row = t.extent.x * es, slice = t.extent.x * t.extent.y * es;
  return to_device ? clEnqueueWriteBufferRect(q, t.device_buffer(), CL_FALSE, origin, origin, region, row, slice, row,
                                              slice, host, n, list, ev)
                   : clEnqueueReadBufferRect(q, t.device_buffer(), CL_FALSE, origin, origin, region, row, slice, row,
                                             slice, host, n, list, ev);
}

cl_int enqueue_kernel(cl_command_queue q, Request& r, cl_uint n, const cl_event* list, cl_event* ev,
                      std::string& what) {
  const KernelWork& work = r.kernel();
  cl_kernel k = work.kernel.handle()();
  for (cl_uint i = 0; i < work.args.size(); ++i) {
    cl_int err = std::visit(
        [&](const auto& arg) -> cl_int {
          using A = std::decay_t<decltype(arg)>;
          if constexpr (std::is_same_v<A, Access>) {
            cl_mem mem = arg.tile->device_buffer();
            return clSetKernelArg(k, i, sizeof mem, &mem);
          } else if constexpr (std::is_same_v<A, ScalarArg>) {
            return clSetKernelArg(k, i, arg.size, arg.bytes.data());
          } else {
            return clSetKernelArg(k, i, arg.bytes, nullptr);
          }
        },
        work.args[i]);
    if (err != CL_SUCCESS) {
      what = "clSetKernelArg(" + std::to_string(i) + ")";
      return err;
    }
  }
  const Range& range = work.range;
  const cl_int err =
      clEnqueueNDRangeKernel(q, k, range.dims(), range.has_offset() ? range.offset().data() : nullptr,
                             range.global().data(), range.has_local() ? range.local().data() : nullptr, n, list, ev);
  if (err != CL_SUCCESS) what = "clEnqueueNDRangeKernel";  // only then: the name is longer than a short string
  return err;
}

}  // namespace

StreamingStep::StreamingStep(Engine& engine, std::size_t queues, bool chain_launches)
    : engine_(engine),
      // Where the device needs flushes to start commands (src/unflushed_probe.hpp): in a burst, 8
      // commands share one flush, and none waits beyond the first enqueue after 50 us before it is
      // flushed. Elsewhere (NVIDIA, PoCL) a burst is not flushed at all: drop_start_flushes().
      flush_policy_(queues, 8, 50'000),
      kernel_cache_(chain_launches),
      unobserved_(queues),
      since_settled_(queues, 0) {}

void StreamingStep::enqueue(const RequestPtr& r) {
  // r, then the commands its enqueue releases (they waited for r's event to exist). `released`
  // allocates only when there are some: this runs for every device request.
  RequestList released;
  for (RequestPtr x = r; x;) {
    try {
      advance(x, released);
    } catch (const std::exception& e) {
      engine_.fail_internally(x, "the streaming node", e);
    }
    x = nullptr;
    if (!released.empty()) {
      // The oldest first, in program order. Taken from the back, a burst released by one enqueue
      // went to the in-order copy queues newest first: Sobel's four held frames had their D2Hs
      // queued 3, 2, 1, 0, so frame 0's waited behind frame 3's kernels (H100 trace at 4K).
      const auto oldest = std::min_element(released.begin(), released.end(),
                                           [](const RequestPtr& a, const RequestPtr& b) { return a->id < b->id; });
      x = std::move(*oldest);
      released.erase(oldest);
    }
  }
  if (backlog_.fetch_sub(1, std::memory_order_acq_rel) == 1 && engine_.policy == Policy::async && flush_when_idle_)
    flush_policy_.idle([this](unsigned q) { engine_.flush(q); });
}

void StreamingStep::flush_lane(unsigned lane) {
  flush_policy_.flush_if_dirty(lane, [this](unsigned q) { engine_.flush(q); });
}

void StreamingStep::advance(const RequestPtr& r, RequestList& released) {
  if (r->ended()) return;  // terminated with a failed command
  if (r->stage == DeviceStage::dispatched) {
    r->stage = DeviceStage::held;
    // A device predecessor held back itself (behind a host request) has no event yet: r waits
    // for its enqueue or its end. Program order guarantees every other one is enqueued or ended.
    for (const auto& p : r->preds) {
      if (p->stage == DeviceStage::enqueued) continue;  // the step's own field: no lock
      std::lock_guard lock(p->m);
      if (p->status.load(std::memory_order_relaxed) != Status::pending) continue;
      r->enqueue_unmet.fetch_add(1, std::memory_order_relaxed);
      p->held.push_back(r);
    }
    if (r->enqueue_unmet.fetch_sub(1, std::memory_order_acq_rel) != 1) {
      log_debug("holding #{} '{}' back until its predecessors are done or enqueued", r->id, r->name);
      return;
    }
  }
  enqueue_command(r, released);
}

void Engine::end_after_preds(const RequestPtr& r, Status s, std::string why) {
  // A request ends only after everything it depends on has ended, whatever its outcome: a wait
  // that returns once r has ended must be able to count on that for r's predecessors too (the
  // hazard tracker forgets accesses that a later write covers, trusting that order). So r, which
  // will not run, ends as a host-side consumer of its predecessors still running.
  {
    std::lock_guard lock(r->m);
    if (s == Status::failed)
      r->failure = std::move(why);
    else
      r->cancel_cause = std::move(why);
    r->cancel_noted.store(true, std::memory_order_release);
  }
  arm_host_side(r);  // → ready(r) once they have ended
}

void Engine::release_held(const RequestPtr& h, RequestList* released) {
  if (h->enqueue_unmet.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (released) {
    released->push_back(h);  // on the streaming node already
    return;
  }
  streaming_step_.handed_over();
  streaming_.try_put(h);
}

void StreamingStep::enqueue_command(const RequestPtr& r, RequestList& released) {
  // The step's own list, reused: one allocation less per command (a nested step would find it
  // taken and start an empty one).
  std::vector<cl_event> wait_list = std::move(spare_wait_list_);
  wait_list.clear();
  struct GiveBack {
    std::vector<cl_event>& list;
    std::vector<cl_event>& spare;
    ~GiveBack() { spare = std::move(list); }
  } give_back{wait_list, spare_wait_list_};
  std::uint32_t implied = 0;
  if (std::string cause = collect_wait_list(*r, wait_list, implied); !cause.empty()) {
    engine_.end_after_preds(r, Status::cancelled, std::move(cause));
    return;
  }
  for (const auto& p : r->preds) flush_for_wait(p->lane, r->lane);
  if (r->kind == Kind::kernel && chains_launches()) chain_previous_launch(*r, wait_list);
  cl_event ev = nullptr;
  std::string what;
  const cl_int err = enqueue_on_driver(*r, wait_list, &ev, what);
  if (engine_.recording) r->enqueue_ns = engine_.now_ns();
  if (err != CL_SUCCESS) {
    engine_.note_fault(*r, err, ("was refused: " + what + " failed with").c_str());
    engine_.end_after_preds(r, Status::failed, what + " failed: " + cl_error_name(err));
    return;
  }
  log_debug("enqueued #{} '{}' on queue {} after {} event(s)", r->id, r->name, r->lane, wait_list.size());
  after_enqueue(r, ev, implied, released);
}

std::string StreamingStep::collect_wait_list(Request& r, std::vector<cl_event>& wait_list, std::uint32_t& implied) {
  if (r.cancel_noted.load(std::memory_order_acquire)) {
    std::string cause;
    {
      std::lock_guard lock(r.m);
      cause = std::move(r.cancel_cause);
    }
    if (!cause.empty()) return cause;
  }
  // r.preds keeps the running ones in front, in order, and loses the ended ones: it becomes r's
  // running_preds without another vector per command. Swapped, not moved, so that when a failed
  // one cuts the loop short every predecessor is still there for end_after_preds.
  std::size_t running = 0;
  for (std::size_t i = 0; i < r.preds.size(); ++i) {
    Request& p = *r.preds[i];
    // Lock-free: status leaves pending last, under p.m, once the rest of p's outcome is in place.
    const Status s = p.status.load(std::memory_order_acquire);
    if (s == Status::done) continue;
    const bool ended_badly = s == Status::failed || s == Status::cancelled;
    // An overwrite of what p read or wrote runs after it; p has ended, so its event, which OpenCL
    // would treat as a reason to terminate r, stays out of the wait list.
    if (ended_badly && !cancel_if_dependent(r, p, s)) continue;
    if (ended_badly || !p.event.load()) {
      if (!ended_badly) cancel_because(r, p, s);
      // Every failure behind r is kept, for the hazard it stays until they are reported (Engine::is_done).
      for (std::size_t j = i + 1; j < r.preds.size(); ++j)
        if (const Status t = r.preds[j]->status.load(std::memory_order_acquire);
            t == Status::failed || t == Status::cancelled)
          cancel_if_dependent(r, *r.preds[j], t);
      return dependency_cause(p, s);
    }
    if (running != i) std::swap(r.preds[running], r.preds[i]);
    ++running;
  }
  r.preds.resize(running);
  // Only the events the others do not imply: each one costs NVIDIA's enqueue 1-2 us
  // (perf/bench_driver_calls), and a tile moved back and forth has its last two transfers as
  // predecessors, the older one already waited on by the newer (perf/RESULTS.md, 2026-11-26 13:08Z).
  implied = 0;
  for (std::size_t i = 0; i < running; ++i)
    if (!waited_on_by_another(r.preds, running, i))
      wait_list.push_back(r.preds[i]->event.load());
    else
      implied |= std::uint32_t(1) << i;  // i < kMostLooked
  return {};
}

bool StreamingStep::waited_on_by_another(const RequestList& running, std::size_t count, std::size_t i) {
  // A wide fan-in pays count^2 lookups for few savings: not looked at.
  constexpr std::size_t kMostLooked = 8;
  if (count > kMostLooked) return false;
  for (std::size_t j = 0; j < count; ++j) {
    // Only a newer one can have waited on it: predecessors are dispatched, and numbered, first.
    if (j == i || running[j]->id < running[i]->id) continue;
    Request& q = *running[j];
    std::lock_guard lock(q.m);  // its running_preds go when it ends: then it implies nothing here
    if (std::find(q.running_preds.begin(), q.running_preds.end(), running[i]) != q.running_preds.end()) return true;
  }
  return false;
}

void StreamingStep::flush_for_wait(unsigned lane, unsigned own_lane) {
  // OpenCL: a command may wait on another queue's event only once that queue was flushed.
  if (lane != own_lane) flush_lane(lane);  // only if it holds an unflushed command
}

void StreamingStep::chain_previous_launch(const Request& r, std::vector<cl_event>& wait_list) {
  // docs/drivers.md, "One kernel, several launches at once": on PoCL < 7.0 two commands of one
  // kernel must not run at once, so each waits for the previous launch of its kernel.
  auto it = last_launch_.find(r.kernel().kernel.name());
  if (it == last_launch_.end()) return;
  // Usually the previous launch is r's own predecessor (a kernel run step after step on one tile):
  // r waits on it already, through the wait list or one that waited on it, and a status query (a
  // lock PoCL's worker threads contend for) and a second copy of the event are saved.
  for (const auto& p : r.preds)
    if (p->event.load() == it->second.event()) return;
  cl_int status = CL_COMPLETE;
  // A failing query is the driver reporting a fault (Engine::command_status): that launch has
  // ended, and its own request reports it; nothing to wait for.
  if (clGetEventInfo(it->second.event(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) !=
      CL_SUCCESS)
    status = CL_COMPLETE;
  if (status > CL_COMPLETE) {
    wait_list.push_back(it->second.event());
    flush_for_wait(it->second.lane, r.lane);
  }
}

cl_int StreamingStep::enqueue_on_driver(Request& r, const std::vector<cl_event>& wait_list, cl_event* ev,
                                        std::string& what) {
  cl_command_queue q = engine_.queues[r.lane]();
  const auto n = cl_uint(wait_list.size());
  const cl_event* list = n ? wait_list.data() : nullptr;
  auto driver = driver_lock();
  if (r.kind == Kind::kernel) return enqueue_kernel(q, r, n, list, ev, what);
  const bool to_device = r.kind == Kind::h2d;
  const cl_int err = enqueue_transfer(q, to_device, r.accesses.front(), n, list, ev);
  if (err != CL_SUCCESS) what = to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
  return err;
}

void StreamingStep::after_enqueue(const RequestPtr& r, cl_event ev, std::uint32_t implied, RequestList& released) {
  // Counted before the event is published below: a waiter that sees the event flushes the queue
  // only if the count says a command is unflushed (flush_lane), and would otherwise skip this one.
  // Under sync too, where that waiter's flush is the only one.
  flush_policy_.enqueued(
      r->lane, [this] { return engine_.now_ns(); }, [this](unsigned i) { engine_.flush(i); });
  // If one of them fails on the device, OpenCL terminates r; the engine says so itself (Engine::finish).
  // One left out of the wait list reaches r through the one that waited on it, which is terminated
  // with it and cancels its own dependants, r among them (or, ended already, is in failed_preds).
  // The lists made here are rarely needed: made only then, a command no longer pays for four
  // empty vectors (their destructors are calls, ~17 instructions each; callgrind, perf/RESULTS.md
  // 2026-11-29).
  std::optional<RequestList> failed_preds;  // cancel_because takes p.m itself
  const RequestList& running = r->preds;    // the streaming step's until they become running_preds below
  for (std::size_t i = 0; i < running.size(); ++i) {
    if (i < 32 && (implied >> i & 1) != 0) continue;
    const RequestPtr& p = running[i];
    std::lock_guard lock(p->m);
    if (const Status s = p->status.load(std::memory_order_relaxed); s == Status::pending)
      p->device_dependants.push_back(r);
    else if (s != Status::done)
      (failed_preds ? *failed_preds : failed_preds.emplace()).push_back(p);
  }
  if (r->kind == Kind::kernel && chains_launches())
    last_launch_[r->kernel().kernel.name()] = {cl::Event(ev, true), r->lane};
  bool register_now = false;
  std::optional<RequestList> held, parked_waits;
  {
    // One lock for all of it: whoever sees the event may complete r, and r's outcome is settled
    // only after its running predecessors' (ReceiverStep::settle_running_preds).
    std::lock_guard lock(r->m);
    // Kept until now: their events had to live through the enqueue. running_preds is empty
    // before: swapped, preds is left empty.
    r->running_preds.swap(r->preds);
    r->event.store(ev);
    r->stage = DeviceStage::enqueued;
    if (!r->held.empty()) held.emplace().swap(r->held);
    if (r->watch == Watch::requested) {
      r->watch = Watch::registered;
      register_now = true;
    }
    if (engine_.any_parked())
      for (const auto& w : r->waiters)
        if (w->kind == Kind::wait) (parked_waits ? *parked_waits : parked_waits.emplace()).push_back(w);
  }
  if (parked_waits)
    for (const auto& w : *parked_waits) engine_.wake_parked(*w);
  if (held)
    for (const auto& h : *held) engine_.release_held(h, &released);
  if (register_now) engine_.receiver_step_.watch(r);  // flushes r's queue
  if (failed_preds) engine_.receiver_step_.cancel_after(*r, *failed_preds);
  unobserved_[r->lane].push_back(r);
  settle_ended(r->lane);
}

void StreamingStep::settle_ended(unsigned lane) {
  // Commands nobody waits for are settled here, oldest first, so they do not pile up (their
  // requests, events and tracker entries). Only successes: a failure is left where it stands for a
  // wait, a host consumer or the poller to report (the oldest then stays until they have). A status
  // query costs 1-1.5 us on NVIDIA beside a stream of enqueues (docs/drivers.md), as much as the
  // rest of a request's engine work, so they are rationed: a lane is looked at every
  // kSettleEvery enqueues, and on an in-order queue one query settles every command ahead of one
  // that ended well. At most kSettleMax per look, so a long kernel's end does not stall one
  // submission with a thousand short ones behind it.
  constexpr unsigned kSettleEvery = 16;
  constexpr std::size_t kSettleMax = 64;
  if (++since_settled_[lane] < kSettleEvery) return;
  since_settled_[lane] = 0;
  auto& fifo = unobserved_[lane];
  auto settle_front = [&](std::size_t count, bool ended_well) {
    for (std::size_t i = 0; i < count && !fifo.empty(); ++i) {
      const RequestPtr& oldest = fifo.front();
      if (!oldest->ended() && !(ended_well ? engine_.receiver_step_.settle_as_ended_well(oldest)
                                           : engine_.receiver_step_.settle_if_succeeded(oldest)))
        return false;
      fifo.pop_front();
    }
    return true;
  };
  if (fifo.size() > 1 && !engine_.out_of_order) {
    // The newest but one usually ended by now; the newest was enqueued just now.
    const std::size_t probe = std::min(fifo.size() - 2, kSettleMax - 1);
    if (engine_.command_status(*fifo[probe]) == CL_COMPLETE) {
      settle_front(probe + 1, true);  // the probed one too: its own query said it ended well
      return;
    }
  }
  // Out of order, or not that far yet: one query each. Probing half as far back each time was tried
  // (3b94e90) and dropped: on the H200 the device keeps up with a chain of 4-byte transfers, the
  // probe above always found its command ended, and the rounds' spread hid any difference
  // (perf/RESULTS.md, 2026-11-29 06:29Z).
  settle_front(kSettleMax, false);
}

}  // namespace hetflow::detail
