#include "copy_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace bench {
namespace {

// Busy for `repeat` passes over its input on one work-group, so it leaves a CPU device's other
// cores to the copies; (acc - acc) keeps the passes from being optimised away.
const char* kSource = R"(
__kernel void copy_loop(__global const float* a, __global float* b, int n, int repeat) {
  const int lid = get_local_id(0), lsz = get_local_size(0);
  float acc = 0.0f;
  for (int r = 1; r < repeat; ++r)
    for (int i = lid; i < n; i += lsz) acc += a[i] * 1e-30f;
  for (int i = lid; i < n; i += lsz) b[i] = a[i] + (acc - acc);
})";

constexpr int kKernelFloats = 1 << 20;

ProbeInterval interval_of(const char* name, const cl::Event& e) {
  return {name, e.getProfilingInfo<CL_PROFILING_COMMAND_START>(), e.getProfilingInfo<CL_PROFILING_COMMAND_END>()};
}

double rate(std::size_t bytes, const ProbeInterval& i) {
  return i.seconds() > 0 ? static_cast<double>(bytes) / i.seconds() : 0.0;
}

}  // namespace

CopyProbe::CopyProbe(const cl::Device& device, std::size_t bytes, int kernel_repeat)
    : bytes_(bytes), context_(device), device_(device) {
  kernel_queue_ = cl::CommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE);
  up_ = cl::CommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE);
  down_ = cl::CommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE);
  service_ = cl::CommandQueue(context_, device_);
  cl::Program program(context_, kSource);
  program.build({device_});
  kernel_ = cl::Kernel(program, "copy_loop");
  kernel_in_ = cl::Buffer(context_, CL_MEM_READ_WRITE, kKernelFloats * sizeof(float));
  kernel_out_ = cl::Buffer(context_, CL_MEM_READ_WRITE, kKernelFloats * sizeof(float));
  kernel_queue_.enqueueFillBuffer(kernel_in_, 1.0f, 0, kKernelFloats * sizeof(float));
  kernel_.setArg(0, kernel_in_);
  kernel_.setArg(1, kernel_out_);
  kernel_.setArg(2, kKernelFloats);
  kernel_.setArg(3, kernel_repeat);
  dev_up_ = cl::Buffer(context_, CL_MEM_READ_WRITE, bytes);
  dev_down_ = cl::Buffer(context_, CL_MEM_READ_WRITE, bytes);
  pin_up_ = cl::Buffer(context_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes);
  pin_down_ = cl::Buffer(context_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes);
  host_up_ = up_.enqueueMapBuffer(pin_up_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes);
  host_down_ = down_.enqueueMapBuffer(pin_down_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes);
  std::memset(host_up_, 1, bytes);
  kernel_queue_.finish();
}

CopyProbe::~CopyProbe() {
  try {
    up_.enqueueUnmapMemObject(pin_up_, host_up_);
    down_.enqueueUnmapMemObject(pin_down_, host_down_);
    up_.finish();
    down_.finish();
  } catch (...) {  // nothing sensible to do in a destructor
  }
}

std::vector<ProbeInterval> CopyProbe::run(const ProbeCase& c) {
  cl::Event ek, eu, ed;
  if (c.fresh) dev_up_ = cl::Buffer(context_, CL_MEM_READ_WRITE, bytes_);
  if (c.touched) {
    service_.enqueueFillBuffer(dev_up_, cl_uchar(0), 0, 1);
    service_.finish();
  }
  if (c.kernel) {
    kernel_queue_.enqueueNDRangeKernel(kernel_, cl::NullRange, cl::NDRange(256), cl::NDRange(256), nullptr, &ek);
    kernel_queue_.flush();
  }
  if (c.d2h) {
    down_.enqueueReadBuffer(dev_down_, CL_FALSE, 0, bytes_, host_down_, nullptr, &ed);
    down_.flush();
  }
  if (c.h2d) {
    up_.enqueueWriteBuffer(dev_up_, CL_FALSE, 0, bytes_, host_up_, nullptr, &eu);
    up_.flush();
  }
  kernel_queue_.finish();
  up_.finish();
  down_.finish();
  std::vector<ProbeInterval> iv;
  if (c.kernel) iv.push_back(interval_of("K", ek));
  if (c.d2h) iv.push_back(interval_of("D2H", ed));
  if (c.h2d) iv.push_back(interval_of("H2D", eu));
  return iv;
}

double CopyProbe::run_alongside(int copies, const std::function<void()>& host_work) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < copies; ++i) {
    up_.enqueueWriteBuffer(dev_up_, CL_FALSE, 0, bytes_, host_up_);
    down_.enqueueReadBuffer(dev_down_, CL_FALSE, 0, bytes_, host_down_);
  }
  up_.flush();
  down_.flush();
  host_work();
  up_.finish();
  down_.finish();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

CopyRates measure_copy_rates(const cl::Device& device, std::size_t bytes, int repeats) {
  CopyProbe probe(device, bytes);
  const ProbeCase up{"H2D alone", false, true, false}, down{"D2H alone", false, false, true},
      both{"H2D + D2H", false, true, true};
  for (const auto* c : {&up, &down, &both}) probe.run(*c);  // first use of every buffer
  CopyRates r;
  for (int i = 0; i < std::max(repeats, 1); ++i) {
    r.h2d = std::max(r.h2d, rate(bytes, probe.run(up)[0]));
    r.d2h = std::max(r.d2h, rate(bytes, probe.run(down)[0]));
    const auto iv = probe.run(both);
    const ProbeInterval span{"both", std::min(iv[0].start, iv[1].start), std::max(iv[0].end, iv[1].end)};
    r.both = std::max(r.both, rate(bytes, span));
  }
  return r;
}

double copy_seconds_bound(const CopyRates& rates, double in, double out) {
  if (rates.h2d <= 0 || rates.d2h <= 0) return 0;
  const double alone_in = in / rates.h2d, alone_out = out / rates.d2h;
  double together = alone_in + alone_out;
  if (rates.both > 0) {
    const double shared = std::min(in, out);
    together = shared / rates.both + (in - shared) / rates.h2d + (out - shared) / rates.d2h;
  }
  return std::max({alone_in, alone_out, std::min(alone_in + alone_out, together)});
}

}  // namespace bench
