// perf/overhead: what hetflow adds per request over calling clEnqueue* directly, for empty
// kernels and 4-byte transfers, on the default device (HETFLOW_DEVICE picks another).
//   bench_overhead [requests-per-run=20000] [runs=7]
// Each run times native and hetflow back to back (interleaved), so machine noise hits both;
// the table shows medians. hetflow runs with recording off and on (what dumps cost). The last row
// is the sync policy: each 4-byte transfer blocks until done, against blocking clEnqueue calls.
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace hetflow;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_of(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) throw OpenCLError(err, what);
}

// The hand-written baseline: one in-order queue per role, each command chained to the previous one
// by its event, as asynchronous OpenCL code with dependencies is written.
struct Native {
  explicit Native(const DeviceInfo& d) : context(d.device) {
    for (auto* q : {&kernel_q, &h2d_q, &d2h_q}) *q = cl::CommandQueue(context, d.device, CL_QUEUE_PROFILING_ENABLE);
    program = cl::Program(context, "__kernel void empty_kernel(__global float* x) { (void)x; }");
    program.build("-cl-kernel-arg-info");
    kernel = cl::Kernel(program, "empty_kernel");
    buffer = cl::Buffer(context, CL_MEM_READ_WRITE, 4);
    pinned = cl::Buffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 4);
    host = static_cast<float*>(h2d_q.enqueueMapBuffer(pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 4));
  }
  void kernels(int n) {
    cl_mem mem = buffer();
    check(clSetKernelArg(kernel(), 0, sizeof mem, &mem), "clSetKernelArg");
    cl_event prev = nullptr;
    const std::size_t global = 1;
    for (int i = 0; i < n; ++i) {
      cl_event ev;
      check(clEnqueueNDRangeKernel(kernel_q(), kernel(), 1, nullptr, &global, nullptr, prev ? 1 : 0, prev ? &prev : nullptr, &ev),
            "clEnqueueNDRangeKernel");
      if (prev) clReleaseEvent(prev);
      prev = ev;
    }
    clFlush(kernel_q());
    clWaitForEvents(1, &prev);
    clReleaseEvent(prev);
  }
  void transfers(int n) {
    cl_event prev = nullptr;
    for (int i = 0; i < n; ++i) {
      cl_event ev;
      const bool up = i % 2 == 0;
      check(up ? clEnqueueWriteBuffer(h2d_q(), buffer(), CL_FALSE, 0, 4, host, prev ? 1 : 0, prev ? &prev : nullptr, &ev)
               : clEnqueueReadBuffer(d2h_q(), buffer(), CL_FALSE, 0, 4, host, prev ? 1 : 0, prev ? &prev : nullptr, &ev),
            "clEnqueue{Write,Read}Buffer");
      clFlush(up ? h2d_q() : d2h_q());  // another queue waits on it
      if (prev) clReleaseEvent(prev);
      prev = ev;
    }
    clWaitForEvents(1, &prev);
    clReleaseEvent(prev);
  }
  void blocking_transfers(int n) {
    for (int i = 0; i < n; ++i)
      check(i % 2 == 0 ? clEnqueueWriteBuffer(h2d_q(), buffer(), CL_TRUE, 0, 4, host, 0, nullptr, nullptr)
                       : clEnqueueReadBuffer(h2d_q(), buffer(), CL_TRUE, 0, 4, host, 0, nullptr, nullptr),
            "blocking clEnqueue{Write,Read}Buffer");
  }
  cl::Context context;
  cl::CommandQueue kernel_q, h2d_q, d2h_q;
  cl::Program program;
  cl::Kernel kernel;
  cl::Buffer buffer, pinned;
  float* host = nullptr;
};

struct Hetflow {
  explicit Hetflow(bool record, Policy policy = Policy::async) : c(options(record, policy)), k(c.kernel("hetflow_test.cl", "empty_kernel")), x(c.tile<float>(1, "x")) {
    x[0] = 1.0f;
  }
  static ControllerOptions options(bool record, Policy policy) {
    ControllerOptions o;
    o.policy = policy;
    o.kernel_queues = 1;
    o.record = record;
    return o;
  }
  void kernels(int n) {
    for (int i = 0; i < n; ++i) c.launch(k, Range(1), io(x));
    c.wait_all();
  }
  void transfers(int n) {
    for (int i = 0; i < n; ++i) {
      if (i % 2 == 0)
        c.move_to(x);
      else
        c.move_from(x);
    }
    c.wait_all();
  }
  Controller c;
  Kernel k;
  Tile<float> x;
};

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 7;
  const auto device = select_device();
  std::printf("perf/overhead on %s (%s), %d requests per run, median of %d runs\n", device.device.name.c_str(),
              device.device.platform_name.c_str(), n, runs);
  Native native(device.device);
  std::vector<double> nk, nt, hk, ht, rk, rt, ns, hs;
  const int blocking_n = std::max(1, n / 10);  // blocking requests are slower; fewer keep runs short
  for (int r = 0; r < runs + 1; ++r) {
    // A fresh controller per run keeps recording's history from growing across runs.
    Hetflow plain(false), recorded(true), sync(false, Policy::sync);
    const double a = seconds_of([&] { native.kernels(n); });
    const double b = seconds_of([&] { plain.kernels(n); });
    const double c = seconds_of([&] { recorded.kernels(n); });
    const double d = seconds_of([&] { native.transfers(n); });
    const double e = seconds_of([&] { plain.transfers(n); });
    const double f = seconds_of([&] { recorded.transfers(n); });
    const double g = seconds_of([&] { native.blocking_transfers(blocking_n); });
    const double h = seconds_of([&] { sync.transfers(blocking_n); });
    if (r == 0) continue;  // warm-up: program builds, first allocations, thread start-up
    nk.push_back(a);
    hk.push_back(b);
    rk.push_back(c);
    nt.push_back(d);
    ht.push_back(e);
    rt.push_back(f);
    ns.push_back(g);
    hs.push_back(h);
  }
  auto us = [&](const std::vector<double>& v) { return median(v) / n * 1e6; };
  std::printf("\n%-22s %12s %12s %12s %14s %14s\n", "request", "native us", "hetflow us", "added us", "recording us",
              "rec. added us");
  std::printf("%-22s %12.2f %12.2f %12.2f %14.2f %14.2f\n", "empty kernel", us(nk), us(hk), us(hk) - us(nk), us(rk),
              us(rk) - us(nk));
  std::printf("%-22s %12.2f %12.2f %12.2f %14.2f %14.2f\n", "4-byte H2D/D2H", us(nt), us(ht), us(ht) - us(nt), us(rt),
              us(rt) - us(nt));
  auto us_blocking = [&](const std::vector<double>& v) { return median(v) / blocking_n * 1e6; };
  std::printf("%-22s %12.2f %12.2f %12.2f %14s %14s\n", "sync 4-byte transfer", us_blocking(ns), us_blocking(hs),
              us_blocking(hs) - us_blocking(ns), "-", "-");
  return 0;
}
