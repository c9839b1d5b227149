// Whether the device runs a kernel, a host-to-device and a device-to-host copy at one instant when
// each is on its own in-order queue with no dependencies (the validation case T-06, docs/architecture.md), written
// as hand-written OpenCL would: pinned host memory (CL_MEM_ALLOC_HOST_PTR, mapped), one flush per
// command. Prints each command's profiled interval relative to the first start, and which overlap.
// The "fresh" case copies into a device buffer never used before: a runtime that allocates device
// memory at first use may hold the other commands back then; "fresh, touched" first writes one
// byte of it on another queue and waits, as hetflow does when it creates a tile.
//   bench_copy_concurrency [MiB=256] [kernel-repeat=64]
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace hetflow;

namespace {

const char* kSource = R"(
__kernel void copy_loop(__global const float* a, __global float* b, int n, int repeat) {
  const int lid = get_local_id(0), lsz = get_local_size(0);
  float acc = 0.0f;
  for (int r = 1; r < repeat; ++r)
    for (int i = lid; i < n; i += lsz) acc += a[i] * 1e-30f;
  for (int i = lid; i < n; i += lsz) b[i] = a[i] + (acc - acc);
})";

struct Interval {
  std::string name;
  cl_ulong start, end;
};

Interval interval_of(const char* name, const cl::Event& e) {
  return {name, e.getProfilingInfo<CL_PROFILING_COMMAND_START>(), e.getProfilingInfo<CL_PROFILING_COMMAND_END>()};
}

bool overlap(const Interval& a, const Interval& b) { return a.start < b.end && b.start < a.end; }

}  // namespace

int main(int argc, char** argv) {
  const std::size_t bytes = std::size_t(argc > 1 ? std::atoi(argv[1]) : 256) << 20;
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 64;
  const auto d = select_device();
  std::printf("copy/kernel concurrency on %s (%s), %zu MiB per copy\n", d.device.name.c_str(),
              d.device.platform_name.c_str(), bytes >> 20);
  cl::Context ctx(d.device.device);
  cl::CommandQueue kq(ctx, d.device.device, CL_QUEUE_PROFILING_ENABLE),
      up(ctx, d.device.device, CL_QUEUE_PROFILING_ENABLE), down(ctx, d.device.device, CL_QUEUE_PROFILING_ENABLE);
  cl::Program program(ctx, kSource);
  program.build();
  cl::Kernel k(program, "copy_loop");
  const int kn = 1 << 20;
  cl::Buffer ka(ctx, CL_MEM_READ_WRITE, kn * sizeof(float)), kb(ctx, CL_MEM_READ_WRITE, kn * sizeof(float));
  kq.enqueueFillBuffer(ka, 1.0f, 0, kn * sizeof(float));
  k.setArg(0, ka);
  k.setArg(1, kb);
  k.setArg(2, kn);
  k.setArg(3, repeat);
  cl::Buffer dev_up(ctx, CL_MEM_READ_WRITE, bytes), dev_down(ctx, CL_MEM_READ_WRITE, bytes);
  cl::Buffer pin_up(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes),
      pin_down(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes);
  void* host_up = up.enqueueMapBuffer(pin_up, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes);
  void* host_down = down.enqueueMapBuffer(pin_down, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes);
  std::fill_n(static_cast<char*>(host_up), bytes, 1);
  kq.finish();

  struct Case {
    const char* name;
    bool kernel, h2d, d2h, fresh = false, touched = false;
  };
  const Case cases[] = {{"H2D alone", false, true, false},
                        {"D2H alone", false, false, true},
                        {"H2D + D2H", false, true, true},
                        {"K + H2D", true, true, false},
                        {"K + D2H", true, false, true},
                        {"K + D2H + H2D", true, true, true},
                        {"same, H2D fresh", true, true, true, true},
                        {"fresh, touched", true, true, true, true, true}};
  cl::CommandQueue service(ctx, d.device.device);
  for (int rep = 0; rep < 2; ++rep) {  // the first round warms up
    if (rep) std::printf("\n%-16s %-42s %s\n", "case", "intervals (us from first start)", "overlapping");
    for (const auto& c : cases) {
      cl::Event ek, eu, ed;
      if (c.fresh) dev_up = cl::Buffer(ctx, CL_MEM_READ_WRITE, bytes);
      if (c.touched) {
        service.enqueueFillBuffer(dev_up, cl_uchar(0), 0, 1);
        service.finish();
      }
      if (c.kernel) {
        kq.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(256), cl::NDRange(256), nullptr, &ek);
        kq.flush();
      }
      if (c.d2h) {
        down.enqueueReadBuffer(dev_down, CL_FALSE, 0, bytes, host_down, nullptr, &ed);
        down.flush();
      }
      if (c.h2d) {
        up.enqueueWriteBuffer(dev_up, CL_FALSE, 0, bytes, host_up, nullptr, &eu);
        up.flush();
      }
      kq.finish();
      up.finish();
      down.finish();
      if (!rep) continue;
      std::vector<Interval> iv;
      if (c.kernel) iv.push_back(interval_of("K", ek));
      if (c.d2h) iv.push_back(interval_of("D2H", ed));
      if (c.h2d) iv.push_back(interval_of("H2D", eu));
      cl_ulong t0 = iv[0].start;
      for (const auto& i : iv) t0 = std::min(t0, i.start);
      std::string text, pairs;
      for (const auto& i : iv) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s[%.0f,%.0f) ", i.name.c_str(), double(i.start - t0) / 1e3,
                      double(i.end - t0) / 1e3);
        text += buf;
      }
      for (std::size_t a = 0; a < iv.size(); ++a)
        for (std::size_t b = a + 1; b < iv.size(); ++b)
          if (overlap(iv[a], iv[b])) pairs += iv[a].name + "||" + iv[b].name + " ";
      std::printf("%-16s %-42s %s\n", c.name, text.c_str(), pairs.empty() ? "none" : pairs.c_str());
    }
  }
  up.enqueueUnmapMemObject(pin_up, host_up);
  down.enqueueUnmapMemObject(pin_down, host_down);
  up.finish();
  down.finish();
}
