// The callback receiver: a device command a host-side consumer waits for has completed (its
// clSetEventCallback fired and the gateway put it here, or a poll or a blocking wait saw it end).
// Records the outcome, which releases the host tasks and waits that depended on it.
#include "engine.hpp"

namespace hetflow::detail {

void Engine::on_device_complete(const RequestPtr& r) {
  cl_int status = CL_COMPLETE;
  clGetEventInfo(r->event.load(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  if (status > CL_COMPLETE) return;  // still queued or running (a wait that returned on an error)
  finish_device(*r, status);
}

void Engine::finish_device(Request& r, cl_int status) {
  if (status == CL_COMPLETE) {
    finish(r, Status::done);
    return;
  }
  // Runtimes end a command whose wait list (or, PoCL, whose in-order queue) held a failed command
  // with CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST or a bare -1, which is not CL_DEVICE_NOT_FOUND
  // here, whatever the error table says.
  const bool inherited = status == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST || status == -1;
  finish(r, Status::failed,
         std::string("the OpenCL command ended with ") +
             (status == -1 ? std::string("status -1") : std::string(cl_error_name(status))) +
             (inherited ? " (a command or host task it waited for, or one ahead of it on its in-order queue, failed)"
                        : ""));
}

}  // namespace hetflow::detail
