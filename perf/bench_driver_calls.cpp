// What single OpenCL calls cost the calling thread on the default device (HETFLOW_DEVICE picks
// another): the calls hetflow's streaming node, dispatcher and waiters make per request. It tells
// which of them are worth saving (a flush per command, arguments set again, status queries).
//   bench_driver_calls [calls=20000] [runs=5]      microseconds per call, median of the runs
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
#include "bench_timing.hpp"

using namespace hetflow;
using Clock = std::chrono::steady_clock;

namespace {

using bench::median;

void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) throw OpenCLError(err, what);
}

struct Setup {
  explicit Setup(const DeviceInfo& d) : context(d.device) {
    for (auto* q : {&q0, &q1}) *q = cl::CommandQueue(context, d.device, CL_QUEUE_PROFILING_ENABLE);
    program = cl::Program(context, "__kernel void empty_kernel(__global float* x) { (void)x; }");
    program.build();
    kernel = cl::Kernel(program, "empty_kernel");
    buffer = cl::Buffer(context, CL_MEM_READ_WRITE, 4);
    cl_mem mem = buffer();
    check(clSetKernelArg(kernel(), 0, sizeof mem, &mem), "clSetKernelArg");
  }
  cl_event launch(cl_command_queue q, cl_uint n, const cl_event* list) {
    const std::size_t global = 1;
    cl_event ev;
    check(clEnqueueNDRangeKernel(q, kernel(), 1, nullptr, &global, nullptr, n, list, &ev), "clEnqueueNDRangeKernel");
    return ev;
  }
  cl::Context context;
  cl::CommandQueue q0, q1;
  cl::Program program;
  cl::Kernel kernel;
  cl::Buffer buffer;
};

// Runs `body(i)` n times after `before()`, then `after()` untimed; returns us per call.
double per_call(int n, const std::function<void()>& before, const std::function<void(int)>& body,
                const std::function<void()>& after) {
  before();
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) body(i);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
  after();
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const auto device = select_device();
  std::printf("OpenCL call costs on %s (%s), %d calls per run, median of %d runs, us per call\n",
              device.device.name.c_str(), device.device.platform_name.c_str(), n, runs);
  Setup s(device.device);
  std::vector<cl_event> events(std::size_t(n), nullptr);
  auto release_all = [&] {
    for (auto& e : events) {
      if (e) clReleaseEvent(e);
      e = nullptr;
    }
  };
  auto drain = [&] {
    s.q0.finish();
    s.q1.finish();
    release_all();
  };
  cl_event other = nullptr;  // a completed event of the other queue
  auto nothing = [] {};

  struct Row {
    const char* name;
    std::function<double()> measure;
  };
  const std::vector<Row> rows = {
      {"enqueue kernel, no wait list, no flush",
       [&] {
         return per_call(
             n, nothing, [&](int i) { events[i] = s.launch(s.q0(), 0, nullptr); }, drain);
       }},
      {"enqueue kernel after previous (same queue)",
       [&] {
         return per_call(
             n, nothing, [&](int i) { events[i] = s.launch(s.q0(), i ? 1 : 0, i ? &events[i - 1] : nullptr); }, drain);
       }},
      {"enqueue kernel after previous + clFlush",
       [&] {
         return per_call(
             n, nothing,
             [&](int i) {
               events[i] = s.launch(s.q0(), i ? 1 : 0, i ? &events[i - 1] : nullptr);
               clFlush(s.q0());
             },
             drain);
       }},
      {"enqueue kernel after other queue's event",
       [&] {
         return per_call(
             n,
             [&] {
               other = s.launch(s.q1(), 0, nullptr);
               s.q1.finish();
             },
             [&](int i) { events[i] = s.launch(s.q0(), 1, &other); },
             [&] {
               drain();
               clReleaseEvent(other);
             });
       }},
      {"clFlush, nothing new queued",
       [&] {
         return per_call(
             n, nothing, [&](int) { clFlush(s.q0()); }, nothing);
       }},
      {"clSetKernelArg (buffer)",
       [&] {
         cl_mem mem = s.buffer();
         return per_call(
             n, nothing, [&](int) { clSetKernelArg(s.kernel(), 0, sizeof mem, &mem); }, nothing);
       }},
      {"clRetainKernel + clReleaseKernel",
       [&] {
         return per_call(
             n, nothing,
             [&](int) {
               clRetainKernel(s.kernel());
               clReleaseKernel(s.kernel());
             },
             nothing);
       }},
      {"clGetEventInfo status, completed event",
       [&] {
         return per_call(
             n,
             [&] {
               other = s.launch(s.q1(), 0, nullptr);
               s.q1.finish();
             },
             [&](int) {
               cl_int st;
               clGetEventInfo(other, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr);
             },
             [&] { clReleaseEvent(other); });
       }},
      {"clSetEventCallback on a queued kernel",
       [&] {
         return per_call(
             n,
             [&] {
               for (int i = 0; i < n; ++i) events[i] = s.launch(s.q0(), 0, nullptr);
             },
             [&](int i) {
               check(clSetEventCallback(
                         events[i], CL_COMPLETE, [](cl_event, cl_int, void*) {}, nullptr),
                     "clSetEventCallback");
             },
             drain);
       }},
      {"clCreateUserEvent + set complete + release",
       [&] {
         return per_call(
             n, nothing,
             [&](int) {
               cl_int err;
               cl_event u = clCreateUserEvent(s.context(), &err);
               check(err, "clCreateUserEvent");
               clSetUserEventStatus(u, CL_COMPLETE);
               clReleaseEvent(u);
             },
             nothing);
       }},
  };
  for (const auto& row : rows) row.measure();  // warm-up
  std::printf("\n%-46s %10s\n", "call", "us/call");
  for (const auto& row : rows) {
    std::vector<double> v;
    for (int r = 0; r < runs; ++r) v.push_back(row.measure());
    std::printf("%-46s %10.3f\n", row.name, median(v));
  }
}
