// The Sobel and Jacobi workloads of tools/workloads/pipelines.* written on StarPU (Debian's 1.3,
// its OpenCL driver), for the side-by-side comparison of perf/peers/ (issue "Side by side with
// StarPU"). The same kernels (kernels_cl/, built with the same options), inputs, launch geometry,
// frame slots and host work as hetflow's and the hand-written versions, so the outputs and
// checksums are bit-identical to theirs; StarPU orders the tasks from their declared accesses
// (implicit, sequentially consistent dependencies on registered data), as hetflow does.
// And the Barnes-Hut loop of tools/workloads/barnes_hut_loop.* cut into chunks, which StarPU
// balances between its CPU workers and the device itself, against hetflow::parallel_for (issue 17).
//
// This header does not include starpu.h: users need only link the library.
#pragma once
#include <hetflow/device.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "workloads/loop_common.hpp"
#include "workloads/pipelines.hpp"

namespace hetflow::workloads {
class BarnesHutLoop;
}

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

// Which implementations of a loop's codelet StarPU may pick (its `where`).
enum class LoopSides { both, cpu, device };

struct StarpuLoop {
  std::size_t chunk = 0;  // iterations per task; 0: max(64, n / 64), bench_loops' dynamic chunk
  int steps = 1;          // timed loop calls, after one untimed
  LoopSides sides = LoopSides::both;
  std::string kernels_dir = "kernels_cl";
};

struct StarpuLoopResult {
  // Per timed call: from its first submission to every chunk's result in host memory.
  std::vector<double> seconds;
  std::vector<workloads::Vec4> output;  // per body, after the last call
  // Tasks each implementation ran, over every call (the untimed one included), and the iterations
  // the device ran over the timed calls.
  std::size_t cpu_tasks = 0, device_tasks = 0, device_iterations = 0;
};

// The force loop of `loop` (after its before_step(): its host images are the tree and the bodies,
// read in place) as one task per chunk of one codelet with both implementations: the loop's own CPU
// body and bh_force of barnes_hut.cl over the chunk's sub-range (global offset = its first body),
// built with the loop's options. Bodies and tree are read-only vectors, moved to the device once,
// before the untimed call; the accelerations are one vector partitioned into the chunks, each
// brought back to host memory by the end of its call, as hetflow's parallel_for does, and set to
// NaN before each call (untimed), so that `output` is the last call's own work.
StarpuLoopResult barnes_hut(Starpu& starpu, const workloads::BarnesHutLoop& loop, const StarpuLoop& run);

}  // namespace hetflow::peers
