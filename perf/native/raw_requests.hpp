// The hand-written baseline of the per-request benchmarks (perf/bench_overhead.cpp,
// perf/peers/bench_peers_overhead.cpp): what a request costs when a program calls clEnqueue*
// itself, one in-order queue per role, each command chained to the previous one by its event, as
// asynchronous OpenCL code with dependencies is written.
#pragma once

#include <hetflow/hetflow.hpp>
#include <hetflow/opencl.hpp>

namespace hetflow::native {

class RawRequests {
 public:
  RawRequests(const DeviceInfo& device, bool profiling);
  // n empty one-work-item kernels on a 4-byte buffer, each waiting on the one before; one flush.
  void kernels(int n);
  // n 4-byte transfers alternating H2D and D2H on their own queues, each waiting on the one before.
  void transfers(int n);
  // n times: an empty kernel, then wait for it (the interactive round trip).
  void round_trips(int n);
  // n blocking 4-byte transfers alternating write and read.
  void blocking_transfers(int n);

 private:
  cl::Context context_;
  cl::CommandQueue kernel_q_, h2d_q_, d2h_q_;
  cl::Program program_;
  cl::Kernel kernel_;
  cl::Buffer buffer_, pinned_;
  float* host_ = nullptr;
};

}  // namespace hetflow::native
