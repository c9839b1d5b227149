#include "native/raw_requests.hpp"

namespace hetflow::native {

namespace {

void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) throw OpenCLError(err, what);
}

}  // namespace

RawRequests::RawRequests(const DeviceInfo& d, bool profiling) : context_(d.device) {
  for (auto* q : {&kernel_q_, &h2d_q_, &d2h_q_})
    *q = cl::CommandQueue(context_, d.device, profiling ? CL_QUEUE_PROFILING_ENABLE : 0);
  program_ = cl::Program(context_, "__kernel void empty_kernel(__global float* x) { (void)x; }");
  program_.build("-cl-kernel-arg-info");
  kernel_ = cl::Kernel(program_, "empty_kernel");
  buffer_ = cl::Buffer(context_, CL_MEM_READ_WRITE, 4);
  pinned_ = cl::Buffer(context_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 4);
  host_ = static_cast<float*>(h2d_q_.enqueueMapBuffer(pinned_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 4));
}

void RawRequests::kernels(int n) {
  cl_mem mem = buffer_();
  check(clSetKernelArg(kernel_(), 0, sizeof mem, &mem), "clSetKernelArg");
  cl_event prev = nullptr;
  const std::size_t global = 1;
  for (int i = 0; i < n; ++i) {
    cl_event ev;
    check(clEnqueueNDRangeKernel(kernel_q_(), kernel_(), 1, nullptr, &global, nullptr, prev ? 1 : 0,
                                 prev ? &prev : nullptr, &ev),
          "clEnqueueNDRangeKernel");
    if (prev) clReleaseEvent(prev);
    prev = ev;
  }
  clFlush(kernel_q_());
  clWaitForEvents(1, &prev);
  clReleaseEvent(prev);
}

void RawRequests::transfers(int n) {
  cl_event prev = nullptr;
  for (int i = 0; i < n; ++i) {
    cl_event ev;
    const bool up = i % 2 == 0;
    check(
        up ? clEnqueueWriteBuffer(h2d_q_(), buffer_(), CL_FALSE, 0, 4, host_, prev ? 1 : 0, prev ? &prev : nullptr, &ev)
           : clEnqueueReadBuffer(d2h_q_(), buffer_(), CL_FALSE, 0, 4, host_, prev ? 1 : 0, prev ? &prev : nullptr, &ev),
        "clEnqueue{Write,Read}Buffer");
    clFlush(up ? h2d_q_() : d2h_q_());  // another queue waits on it
    if (prev) clReleaseEvent(prev);
    prev = ev;
  }
  clWaitForEvents(1, &prev);
  clReleaseEvent(prev);
}

void RawRequests::round_trips(int n) {
  cl_mem mem = buffer_();
  check(clSetKernelArg(kernel_(), 0, sizeof mem, &mem), "clSetKernelArg");
  const std::size_t global = 1;
  for (int i = 0; i < n; ++i) {
    cl_event ev;
    check(clEnqueueNDRangeKernel(kernel_q_(), kernel_(), 1, nullptr, &global, nullptr, 0, nullptr, &ev),
          "clEnqueueNDRangeKernel");
    check(clWaitForEvents(1, &ev), "clWaitForEvents");
    clReleaseEvent(ev);
  }
}

void RawRequests::blocking_transfers(int n) {
  for (int i = 0; i < n; ++i)
    check(i % 2 == 0 ? clEnqueueWriteBuffer(h2d_q_(), buffer_(), CL_TRUE, 0, 4, host_, 0, nullptr, nullptr)
                     : clEnqueueReadBuffer(h2d_q_(), buffer_(), CL_TRUE, 0, 4, host_, 0, nullptr, nullptr),
          "blocking clEnqueue{Write,Read}Buffer");
}

}  // namespace hetflow::native
