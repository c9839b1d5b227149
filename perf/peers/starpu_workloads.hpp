// The Sobel and Jacobi workloads of tools/workloads/pipelines.* written on StarPU (Debian's 1.3,
// its OpenCL driver), for the side-by-side comparison of perf/peers/ (issue "Side by side with
// StarPU"). The same kernels (kernels_cl/, built with the same options), inputs, launch geometry,
// frame slots and host work as hetflow's and the hand-written versions, so the outputs and
// checksums are bit-identical to theirs; StarPU orders the tasks from their declared accesses
// (implicit, sequentially consistent dependencies on registered data), as hetflow does.
//
// This header does not include starpu.h: users need only link the library.
#pragma once
#include <hetflow/device.hpp>

#include <string>
#include <vector>

#include "workloads/pipelines.hpp"

namespace hetflow::peers {

// StarPU started with one OpenCL worker, on `device` (the device hetflow selected), plus its CPU
// workers (STARPU_NCPU, default: the cores its OpenCL driver thread leaves), with `scheduler` as
// its policy (STARPU_SCHED, when set, wins: StarPU reads it first; scheduler() says which ran).
// StarPU is one per process: construct one at a time. Its workers are paused outside the
// workloads below: idle StarPU workers poll in a tight loop and would take the cores from
// whatever else the process times.
class Starpu {
 public:
  Starpu(const DeviceInfo& device, const std::string& scheduler);
  ~Starpu();
  Starpu(const Starpu&) = delete;
  Starpu& operator=(const Starpu&) = delete;

  const std::string& scheduler() const { return scheduler_; }
  // "StarPU 1.3.10, 1 CPU worker(s), OpenCL worker 'OpenCL 0 (...)', STARPU_OPENCL_PIPELINE=..."
  const std::string& description() const { return description_; }
  int opencl_devid() const { return devid_; }

  void resume();
  void pause();

 private:
  std::string scheduler_, description_;
  int devid_ = -1;
  bool paused_ = false;
};

// The policies of StarPU 1.3 that apply to one OpenCL device and host tasks, in the order the
// benchmark tries them.
std::vector<std::string> starpu_schedulers();

struct StarpuSobel {
  int width = 0, height = 0, frames = 0;
  int slots = 2;                           // frame slots (input and result images), as hetflow's version uses
  std::string kernels_dir = "kernels_cl";  // where sobel.cl is, after $HETFLOW_KERNEL_PATH
};

// Per frame i, slot i % slots: CPU task "generate" (W input) → rows → col_smooth, col_diff →
// magnitude (W result) → CPU task "consume" (R result). StarPU moves the input to the device and
// the result back as the tasks need them. Every kernel runs once per slot before the timed loop.
workloads::RunResult sobel(Starpu& starpu, const StarpuSobel& run);

// `iterations` jacobi_step launches rotating over as many grids as hetflow's version (the
// smallest count >= 2 that does not divide copy_every); every copy_every iterations a CPU task
// sums the current grid (StarPU fetching it), and the final grid is fetched at the end.
workloads::RunResult jacobi(Starpu& starpu, int n, int iterations, int copy_every = 10,
                            const std::string& kernels_dir = "kernels_cl");

}  // namespace hetflow::peers
