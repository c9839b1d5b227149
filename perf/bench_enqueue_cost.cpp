// How long the host thread spends inside non-blocking clEnqueue{Write,Read}Buffer, against how
// long the copy runs on the device, for pinned (CL_MEM_ALLOC_HOST_PTR, mapped) and pageable host
// memory. A runtime that stages pageable copies in the calling thread shows it here; hetflow's
// streaming node is serial, so such a call would hold back every later command.
//   bench_enqueue_cost [MiB=40]
#include <hetflow/hetflow.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace hetflow;

int main(int argc, char** argv) {
  const std::size_t bytes = std::size_t(argc > 1 ? std::atoi(argv[1]) : 40) << 20;
  const auto d = select_device();
  cl::Context ctx(d.device.device);
  cl::CommandQueue q(ctx, d.device.device, CL_QUEUE_PROFILING_ENABLE);
  cl::Buffer dev(ctx, CL_MEM_READ_WRITE, bytes);
  cl::Buffer pinned_buf(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes);
  auto* pinned = static_cast<char*>(q.enqueueMapBuffer(pinned_buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes));
  std::vector<char> pageable(bytes, 1);
  std::printf("%s, %zu MiB\n%-10s %-6s %12s %12s\n", d.device.name.c_str(), bytes >> 20, "memory", "dir", "in call us",
              "device us");
  for (int rep = 0; rep < 3; ++rep)
    for (char* host : {pinned, pageable.data()})
      for (bool up : {true, false}) {
        cl::Event ev;
        const auto t0 = std::chrono::steady_clock::now();
        if (up)
          q.enqueueWriteBuffer(dev, CL_FALSE, 0, bytes, host, nullptr, &ev);
        else
          q.enqueueReadBuffer(dev, CL_FALSE, 0, bytes, host, nullptr, &ev);
        const double call = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        ev.wait();
        const double run = double(ev.getProfilingInfo<CL_PROFILING_COMMAND_END>() -
                                  ev.getProfilingInfo<CL_PROFILING_COMMAND_START>()) /
                           1e3;
        if (rep == 2)
          std::printf("%-10s %-6s %12.1f %12.1f\n", host == pinned ? "pinned" : "pageable", up ? "H2D" : "D2H", call,
                      run);
      }
  q.enqueueUnmapMemObject(pinned_buf, pinned);
  q.finish();
}
