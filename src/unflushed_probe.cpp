#include "unflushed_probe.hpp"

#include <thread>

#include "driver_lock.hpp"
#include "hetflow/errors.hpp"

namespace hetflow::detail {

UnflushedProbe probe_unflushed(const cl::Context& context, const cl::CommandQueue& queue,
                               std::chrono::microseconds patience) {
  cl_int err = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(context(), CL_MEM_READ_WRITE, sizeof(cl_uint), nullptr, &err);
  if (err != CL_SUCCESS) return {false, std::string("clCreateBuffer failed: ") + cl_error_name(err)};
  const cl_uint value = 0x5eed;
  cl_event event = nullptr;
  {
    auto driver = driver_lock();
    err = clEnqueueWriteBuffer(queue(), buffer, CL_FALSE, 0, sizeof value, &value, 0, nullptr, &event);
  }
  UnflushedProbe result{false, ""};
  if (err != CL_SUCCESS) {
    result.why = std::string("clEnqueueWriteBuffer failed: ") + cl_error_name(err);
  } else {
    const auto start = std::chrono::steady_clock::now();
    cl_int status = CL_QUEUED;
    for (;;) {
      err = clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
      if (err != CL_SUCCESS || status <= CL_COMPLETE) break;
      if (std::chrono::steady_clock::now() - start >= patience) break;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
    if (err != CL_SUCCESS)
      result.why = std::string("clGetEventInfo failed: ") + cl_error_name(err);
    else if (status == CL_COMPLETE)
      result = {true, "an unflushed 4-byte write ended within " + std::to_string(waited.count()) + " us"};
    else if (status < 0)
      result.why = std::string("the unflushed write failed: ") + cl_error_name(status);
    else
      result.why = "an unflushed 4-byte write had not ended after " + std::to_string(waited.count()) + " us";
    // `value` is read by the write: it must have ended before this returns, whatever happened.
    auto driver = driver_lock();
    clFlush(queue());
    clWaitForEvents(1, &event);
  }
  if (event) clReleaseEvent(event);
  clReleaseMemObject(buffer);
  return result;
}

}  // namespace hetflow::detail
