#include "request.hpp"

#include <hetflow/errors.hpp>

#include <stdexcept>

#include "driver_lock.hpp"
#include "log.hpp"

namespace hetflow::detail {

void Request::check_payload() const {
  bool fits = false;
  switch (kind) {
    case Kind::h2d:
    case Kind::d2h:
      fits = std::holds_alternative<TransferWork>(work);
      break;
    case Kind::kernel:
      fits = std::holds_alternative<KernelWork>(work);
      break;
    case Kind::host:
      fits = std::holds_alternative<HostWork>(work) || std::holds_alternative<HookWork>(work);
      break;
    case Kind::release:
      fits = std::holds_alternative<HostWork>(work);
      break;
    case Kind::wait:
      fits = std::holds_alternative<WaitWork>(work);
      break;
  }
  if (!fits)
    throw std::logic_error("hetflow internal error: a " + std::string(to_string(kind)) + " request '" + name +
                           "' built with another kind's payload");
}

void Request::take_leftovers(Leftovers& l) {
  l.accesses.swap(accesses);
  if (auto* k = std::get_if<KernelWork>(&work)) l.args.swap(k->args);
  if (auto* h = std::get_if<HostWork>(&work)) l.task = std::move(h->fn);
  if (auto* w = std::get_if<WaitWork>(&work)) {
    // The waiting thread reads only `released`, its condition variable and `wake` from here on
    // (Engine::wait_request); an empty `device_preds` leaves it nothing to block on, as ended ones would,
    // and an empty `host_preds` nothing to run (it looks only before its release).
    l.tile = std::move(w->tile);
    l.requests.swap(w->on);
    l.requests.insert(l.requests.end(), std::make_move_iterator(w->device_preds.begin()),
                      std::make_move_iterator(w->device_preds.end()));
    w->device_preds.clear();
    l.requests.insert(l.requests.end(), std::make_move_iterator(w->host_preds.begin()),
                      std::make_move_iterator(w->host_preds.end()));
    w->host_preds.clear();
  }
}

Request::~Request() {
  live.fetch_sub(1, std::memory_order_relaxed);
  if (cl_event e = event.load()) {
    // A destructor cannot report it otherwise; the event may leak, nothing else goes wrong.
    if (const cl_int err = clReleaseEvent(e); err != CL_SUCCESS)
      log().warn("clReleaseEvent of request #{} '{}' failed: {}", id, name, cl_error_name(err));
  }
}

cl_int TileState::unmap_host_image() {
  cl_int err = CL_SUCCESS;
  if (host && host_buffer() && unmap_queue()) {
    auto driver = driver_lock();
    err = clEnqueueUnmapMemObject(unmap_queue(), host_buffer(), host, 0, nullptr, nullptr);
  }
  host = nullptr;
  return err;
}

TileState::~TileState() {
  // free() reports a failed unmapping through its request; a tile dropped with its last handle
  // has no one to tell but the log.
  const std::string tile_name = name;
  if (const cl_int err = unmap_host_image(); err != CL_SUCCESS)
    log().warn("unmapping the host image of tile '{}' failed: {}", tile_name, cl_error_name(err));
}

std::string dependency_cause(const Request& p, Status s) {
  std::string cause = "request #" + std::to_string(p.id) + " '" + p.name + "' that it depends on " +
                      (s == Status::pending ? std::string("was never enqueued") : std::string(to_string(s)));
  if (s != Status::cancelled) return cause;
  RequestPtr root;
  {
    std::lock_guard lock(const_cast<Request&>(p).m);
    if (p.failures_behind && !p.failures_behind->empty()) root = p.failures_behind->front().lock();
  }
  if (root) cause += ", behind it request #" + std::to_string(root->id) + " '" + root->name + "' that failed";
  return cause;
}

}  // namespace hetflow::detail
