#include "request.hpp"

#include "driver_lock.hpp"

namespace hetflow::detail {

Request::~Request() {
  live.fetch_sub(1, std::memory_order_relaxed);
  if (cl_event e = event.load()) clReleaseEvent(e);
}

TileState::~TileState() {
  // Unmapping is enqueued, not waited for: OpenCL keeps the buffer alive until its commands end.
  if (host && host_buffer() && unmap_queue()) {
    auto driver = driver_lock();
    clEnqueueUnmapMemObject(unmap_queue(), host_buffer(), host, 0, nullptr, nullptr);
  }
}

}  // namespace hetflow::detail
