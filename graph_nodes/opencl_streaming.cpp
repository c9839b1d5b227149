// The OpenCL streaming node: serial, so each queue receives its commands in program order. It
// enqueues with event wait lists and returns at once; completion comes back, only where a host-side
// consumer asked for it, through clSetEventCallback and the async_node's gateway. Queues are
// flushed when something needs their commands on the device, not after each (src/flush_policy.hpp).
#include "engine.hpp"
#include "log.hpp"

namespace hetflow::detail {
namespace {

bool contiguous(const Box& b, const Extent& e) {
  if (b.size[1] == 1 && b.size[2] == 1) return true;          // part of one row
  if (b.size[0] != e.x) return false;                           // rows are cut
  return b.size[2] == 1 || b.size[1] == e.y;                    // whole rows of one slice, or whole slices
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

cl_int enqueue_kernel(cl_command_queue q, Request& r, cl_uint n, const cl_event* list, cl_event* ev, std::string& what) {
  cl_kernel k = r.kernel.handle()();
  for (cl_uint i = 0; i < r.args.size(); ++i) {
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
        r.args[i]);
    if (err != CL_SUCCESS) {
      what = "clSetKernelArg(" + std::to_string(i) + ")";
      return err;
    }
  }
  const Range& range = *r.range;
  what = "clEnqueueNDRangeKernel";
  return clEnqueueNDRangeKernel(q, k, range.dims(), range.has_offset() ? range.offset().data() : nullptr,
                                range.global().data(), range.has_local() ? range.local().data() : nullptr, n, list, ev);
}

}  // namespace

void Engine::enqueue(const RequestPtr& r) {
  enqueue_command(r);
  if (streaming_backlog_.fetch_sub(1, std::memory_order_acq_rel) == 1 && policy == Policy::async)
    flush_policy_.idle([this](unsigned q) { clFlush(queues[q]()); });
}

void Engine::enqueue_command(const RequestPtr& r) {
  std::vector<cl_event> wait_list = std::move(r->gates);  // retained by the dispatcher
  auto release_gates = [&] {
    for (std::size_t i = 0; i < wait_list.size(); ++i) clReleaseEvent(wait_list[i]);
  };
  std::string cause = std::move(r->cancel_cause);
  const std::size_t gate_count = wait_list.size();
  bool host_free = gate_count == 0;
  if (cause.empty()) {
    for (const auto& p : r->preds) {
      std::lock_guard lock(p->m);
      const Status s = p->status.load();
      cl_event e = p->event.load();
      if (s == Status::failed || s == Status::cancelled || !e) {
        cause = "request #" + std::to_string(p->id) + " '" + p->name + "' that it depends on " +
                (s == Status::pending ? std::string("was never enqueued") : to_string(s));
        break;
      }
      wait_list.push_back(e);
      if (!p->finished) p->device_dependants.push_back(r);
      host_free = host_free && (p->finished || p->host_free);
    }
  }
  if (!cause.empty()) {
    r->preds.clear();
    wait_list.resize(gate_count);
    release_gates();
    finish(*r, Status::cancelled, "not run: " + cause);
    return;
  }

  // OpenCL: a command may wait on another queue's event only once that queue was flushed.
  for (const auto& p : r->preds)
    if (p->lane != r->lane && flush_policy_.dirty(p->lane)) {
      clFlush(queues[p->lane]());
      flush_policy_.flushed(p->lane);
    }

  cl_command_queue q = queues[r->lane]();
  cl_event ev = nullptr;
  std::string what;
  cl_int err = CL_SUCCESS;
  const auto n = cl_uint(wait_list.size());
  const cl_event* list = n ? wait_list.data() : nullptr;
  {
    // PoCL 3.1 never runs a command enqueued after a user event in its wait list has failed, and
    // its in-order queue stalls behind it for good. So a gated command is enqueued only while no
    // gate can change, and not at all once one has failed (its host predecessor's failure has
    // cancelled it already, through device_dependants).
    std::unique_lock gates(gate_mutex_, std::defer_lock);
    if (gate_count > 0) gates.lock();
    bool gate_failed = false;
    for (std::size_t i = 0; i < gate_count; ++i) {
      cl_int status = CL_SUBMITTED;
      clGetEventInfo(wait_list[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
      gate_failed = gate_failed || status < 0;
    }
    if (gate_failed) {
      err = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    } else if (r->kind == Kind::kernel) {
      err = enqueue_kernel(q, *r, n, list, &ev, what);
    } else {
      const bool to_device = r->kind == Kind::h2d;
      what = to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
      err = enqueue_transfer(q, to_device, r->accesses.front(), n, list, &ev);
    }
  }
  wait_list.resize(gate_count);
  release_gates();
  r->preds.clear();  // only now: their events had to live through the enqueue
  if (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST && !ev) {
    finish(*r, Status::cancelled, "not run: a host task it depends on failed");
    return;
  }
  if (err != CL_SUCCESS) {
    finish(*r, Status::failed, what + " failed: " + cl_error_name(err));
    return;
  }
  // An in-order queue runs a command only after the ones before it, so a command behind one that
  // waits on the host is not host-free either, until that one has finished.
  r->host_free = host_free;
  if (!out_of_order) {
    RequestPtr& blocker = lane_blocker_[r->lane];
    if (blocker && blocker->done_flag.load(std::memory_order_acquire)) blocker.reset();
    r->host_free = host_free && !blocker;
    if (!r->host_free) blocker = r;
  }
  r->event.store(ev);
  log().debug("enqueued #{} '{}' on queue {} after {} event(s)", r->id, r->name, r->lane, n);
  if (policy == Policy::async) flush_policy_.enqueued(r->lane, now_ns(), [this](unsigned i) { clFlush(queues[i]()); });

  bool register_now = false;
  {
    std::lock_guard lock(r->m);
    if (r->watch_requested && !r->watched) register_now = r->watched = true;
  }
  if (register_now) {
    watch(r);  // flushes r's queue
    flush_policy_.flushed(r->lane);
  }
}

}  // namespace hetflow::detail
