// Device faults (docs/drivers.md, "Device faults"): how a command's outcome is read, and the
// controller's lost state once a fault has taken the device context with it.
#include "driver_lock.hpp"
#include "engine.hpp"
#include "log.hpp"

namespace hetflow::detail {
namespace {
// What an injected fault ends with: NVIDIA's status for a kernel that faulted.
constexpr cl_int injected_fault_status = -9999;
}  // namespace

cl_int Engine::command_status(const Request& r) {
  cl_int status = CL_QUEUED;
  const cl_int err = clGetEventInfo(r.event.load(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  // NVIDIA (driver 580) reports a faulted kernel as CL_COMPLETE, in its callback too, and says
  // what happened only through the query's own result (-9999) — as it does for clWaitForEvents.
  if (err != CL_SUCCESS) return err < 0 ? err : CL_INVALID_EVENT;
  if (status == CL_COMPLETE && r.kind == Kind::kernel && !fault_kernel_.empty() &&
      r.kernel().kernel.name() == fault_kernel_) {
    injected_fault_.store(true, std::memory_order_release);
    return injected_fault_status;
  }
  return status;
}

void Engine::note_fault(const Request& r, cl_int status, const char* what) {
  if (lost_.load(std::memory_order_acquire)) return;
  // A command failing need not mean the context is gone (a refused enqueue, a runtime that
  // recovers): ask the driver with a command of the engine's own.
  cl_int probe = CL_SUCCESS;
  if (injected_fault_.load(std::memory_order_acquire)) {
    probe = CL_INVALID_COMMAND_QUEUE;
  } else {
    auto driver = driver_lock();
    probe = clFinish(service_queue_());
  }
  if (probe == CL_SUCCESS) return;
  mark_lost(to_string(r.kind) + std::string(" '") + r.name + "' (request #" + std::to_string(r.id) + ") " + what + " " +
            cl_error_name(status) + ", and the driver now answers " + cl_error_name(probe));
}

void Engine::mark_lost(const std::string& cause) {
  std::lock_guard lock(lost_mutex_);
  if (lost_.load(std::memory_order_relaxed)) return;
  lost_message_ = "the device context of this controller (" + choice.device.name + ") is lost: " + cause +
                  ". Make a new Controller (a driver may refuse a new context on that device for the rest of the "
                  "process, as NVIDIA's does: then restart the process). Host images of its tiles stay readable.";
  lost_.store(true, std::memory_order_release);
  log().error("{}", lost_message_);
}

void Engine::fail_lane(unsigned lane, cl_int err) {
  // Commands a failed flush leaves behind may never reach the device, and nothing would tell the
  // engine: the queue is unusable, so the controller is lost, and the commands a host-side
  // consumer waits for fail now rather than leave it waiting. Commands nobody waits for yet fail
  // when someone does (watch() flushes again).
  const std::string why = "clFlush of queue " + std::to_string(lane) + " failed: " + cl_error_name(err);
  mark_lost(why);
  for (const auto& r : receiver_step_.watched_on(lane)) finish(*r, Status::failed, why);
}

void Engine::throw_if_lost(std::vector<FailedRequest>&& failures) const {
  if (!lost_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(lost_mutex_);
  throw DeviceLost(lost_message_, std::move(failures));
}

}  // namespace hetflow::detail
