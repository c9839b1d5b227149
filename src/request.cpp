#include "request.hpp"

namespace hetflow::detail {

Request::~Request() {
  if (cl_event e = event.load()) clReleaseEvent(e);
  if (gate) {
    // A host request dropped before it ran (controller torn down) must not leave commands hanging.
    cl_int gate_status = CL_COMPLETE;
    clGetEventInfo(gate, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof gate_status, &gate_status, nullptr);
    if (gate_status > CL_COMPLETE) clSetUserEventStatus(gate, -1);
    clReleaseEvent(gate);
  }
  for (cl_event g : gates) clReleaseEvent(g);
}

TileState::~TileState() {
  // Unmapping is enqueued, not waited for: OpenCL keeps the buffer alive until its commands end.
  if (host && host_buffer() && unmap_queue()) clEnqueueUnmapMemObject(unmap_queue(), host_buffer(), host, 0, nullptr, nullptr);
}

}  // namespace hetflow::detail
