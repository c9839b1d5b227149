// A device's copy engines measured the way hand-written OpenCL uses them: pinned host memory
// (CL_MEM_ALLOC_HOST_PTR, mapped once), one in-order profiling queue per direction and one for a
// kernel, each command flushed, no dependencies between them. bench_copy_concurrency prints which
// commands overlap; bench_workloads takes the copy rates for its bound, measured in its own
// process rather than read off the run it judges.
#pragma once
#include <hetflow/opencl.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace bench {

struct ProbeCase {
  const char* name;
  bool kernel, h2d, d2h;
  bool fresh = false;    // copy H2D into a device buffer never used before
  bool touched = false;  // ... after writing one byte of it on another queue (as hetflow does)
};

struct ProbeInterval {
  std::string name;  // "K", "D2H", "H2D"
  cl_ulong start = 0, end = 0;
  double seconds() const { return end > start ? static_cast<double>(end - start) * 1e-9 : 0.0; }
};

class CopyProbe {
 public:
  // `bytes` per copy; the kernel reads 1 Mi floats `kernel_repeat` times on one work-group.
  CopyProbe(const cl::Device& device, std::size_t bytes, int kernel_repeat = 64);
  CopyProbe(const CopyProbe&) = delete;
  CopyProbe& operator=(const CopyProbe&) = delete;
  ~CopyProbe();

  // Enqueues the case's commands (kernel, then D2H, then H2D, each flushed), waits for all of them
  // and returns their profiled intervals in that order.
  std::vector<ProbeInterval> run(const ProbeCase& c);
  // Enqueues `copies` H2D and `copies` D2H of bytes() each (both queues, flushed), runs host_work()
  // on the calling thread meanwhile, and returns the wall seconds until both are done: what the
  // machine takes for that host work and those copies when they share its memory, as a pipeline's
  // do.
  double run_alongside(int copies, const std::function<void()>& host_work);
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_;
  cl::Context context_;
  cl::Device device_;
  cl::CommandQueue kernel_queue_, up_, down_, service_;
  cl::Kernel kernel_;
  cl::Buffer kernel_in_, kernel_out_, dev_up_, dev_down_, pin_up_, pin_down_;
  void* host_up_ = nullptr;
  void* host_down_ = nullptr;
};

// Pinned copy rates in bytes per second: each direction alone, and each direction while the other
// runs (the pair's bytes each way over the time from the first start to the last end, so a device
// that runs them one after the other shows half its rate). The best of `repeats` runs of each case
// after one warm-up round: the machine's capability, which a workload's copies cannot beat.
struct CopyRates {
  double h2d = 0, d2h = 0;  // alone
  double both = 0;          // each direction, both at once
};
CopyRates measure_copy_rates(const cl::Device& device, std::size_t bytes, int repeats);

// The shortest time in which `in` bytes can go host → device and `out` bytes device → host at
// these rates: both directions at once while both have bytes left and the rest alone, or one
// direction after the other when that is faster, and never less than either direction alone.
double copy_seconds_bound(const CopyRates& rates, double in, double out);

}  // namespace bench
