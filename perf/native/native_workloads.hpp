// Hand-written OpenCL versions of the three workloads (Sobel over a video, Jacobi with periodic
// snapshots to the host, matrix power with a host-side norm after each product), written the way
// an expert writes them by hand, as the baselines the engine is measured against.
//
//  Mode::sync   one in-order profiling queue; blocking transfers; the host work of each step runs
//               after the transfer it needs has completed. Nothing overlaps.
//  Mode::async  three in-order profiling queues (H2D, kernels, D2H) ordered by cl_event wait lists,
//               clFlush after every enqueue another queue waits on, pinned host memory, and two
//               (Sobel: SobelParams::slots) device/host images of whatever streams, so that (Sobel)
//               frame i+1's H2D overlaps frame i's kernels and frame i-1's D2H, and the host work
//               (frame generation, sums, norms) overlaps the device.
//
// Both modes use the same pinned host buffers (CL_MEM_ALLOC_HOST_PTR buffers mapped once), the same
// kernels (kernels_cl/, built with exactly kBuildOptions) and the same launch geometry as the
// engine, so for the same inputs the two modes (and the engine) give bit-identical outputs and
// checksums; only the overlap differs.
//
// Every OpenCL failure is thrown as hetflow::OpenCLError (the OpenCL call that failed and its
// status), a kernel file that does not build as hetflow::BuildError, a missing kernel file as
// hetflow::FileNotFoundError, bad parameters as hetflow::UsageError.
#pragma once
#include <string>
#include <vector>

#include <hetflow/opencl.hpp>

namespace hetflow::native {

enum class Mode { sync, async };
const char* to_string(Mode mode);  // "sync" / "async"

// The options every workload program is built with (the engine uses the same ones).
inline constexpr const char* kBuildOptions = "-cl-kernel-arg-info";

struct Result {
  // Wall time of the timed loop: from the first H2D of the input to the host's consumption of the
  // last result, the final D2H included. Context, queue, program and buffer creation, the input
  // generation of Jacobi/matpow and a warm-up launch of every kernel are outside it (Sobel's frame
  // generation is inside: it is the workload's host read).
  double seconds = 0;
  // Sums of the per-command device times (CL_PROFILING_COMMAND_END - START) of the timed loop.
  double h2d_seconds = 0, d2h_seconds = 0, kernel_seconds = 0;
  // Wall time the host threads spent in the workload's host work inside the timed loop (Sobel:
  // frame generation and result sums, added over the two threads under async; Jacobi: snapshot
  // sums; matpow: norms). In sync mode seconds ~ host_seconds + device time; in async mode the two
  // overlap.
  double host_seconds = 0;
  std::vector<float> output;  // Sobel: last frame's result; Jacobi: final grid; matpow: final product
  // Sobel: sum over frames of workloads::host_sum(result); Jacobi: sum over snapshots of
  // host_sum(snapshot); matpow: sum over products of frobenius_norm(P_k).
  double checksum = 0;
};

// Frames are workloads::generate_frame(dst, width, height, i), i = 0..frames-1, written by the host
// straight into the pinned host buffer (the "host read" of 004 Fig. 4); each result comes back to
// a pinned buffer and the host sums it (the "host write").
// Under async, frame i uses slot i % slots (pinned host and device buffers of an input and an
// output frame); the host thread generates and enqueues, and a second one sums each result once
// its D2H is done (ordered_consumer.hpp), so the two overlap as hetflow's host tasks do. The host
// work of both runs in one TBB arena of host_threads, as in the hetflow version
// (workloads/sobel_sizing.hpp gives both defaults).
struct SobelParams {
  int width = 0, height = 0, frames = 0;
  std::string kernels_dir = "kernels_cl";  // where sobel.cl is, after $HETFLOW_KERNEL_PATH
  int slots = 0;                           // async; 0: workloads::kDefaultSobelSlots
  int host_threads = 0;                    // 0: workloads::default_host_threads(device)
};

// Grid: workloads::jacobi_initial_grid(n). Every copy_every iterations the current grid goes to
// the host, which sums it into the checksum. The final grid (after `iterations` steps) is the
// output; when iterations is a multiple of copy_every it is the last snapshot, otherwise one more
// D2H fetches it.
struct JacobiParams {
  int n = 0, iterations = 0;
  int copy_every = 10;
  std::string kernels_dir = "kernels_cl";  // where jacobi.cl is, after $HETFLOW_KERNEL_PATH
};

// A: workloads::matpow_input(n); P_1 = A·A, P_{k+1} = P_k·A, for k = 1..products; after each
// product P_k goes to the host, which adds frobenius_norm(P_k) to the checksum. n must be a
// multiple of matmul.cl's TILE (16 by default).
struct MatpowParams {
  int n = 0, products = 0;
  std::string kernels_dir = "kernels_cl";  // where matmul.cl is, after $HETFLOW_KERNEL_PATH
};

Result run_sobel(const cl::Device& device, const SobelParams& params, Mode mode);
Result run_jacobi(const cl::Device& device, const JacobiParams& params, Mode mode);
Result run_matpow(const cl::Device& device, const MatpowParams& params, Mode mode);

// ---- kernel files ------------------------------------------------------------------------------
// The first directory of $HETFLOW_KERNEL_PATH (':'-separated) when it is set and not empty, else
// `fallback`.
std::string kernel_dir(const std::string& fallback = "kernels_cl");
// The path of kernel file `file`: the first of the directories of $HETFLOW_KERNEL_PATH, then
// `kernels_dir`, that holds it. Throws hetflow::FileNotFoundError naming every place searched.
std::string locate_kernel_file(const std::string& file, const std::string& kernels_dir = "kernels_cl");
// Reads `path` and builds it for `device` with kBuildOptions. Throws hetflow::BuildError (with the
// build log) when it does not compile.
cl::Program build_program(const cl::Context& context, const cl::Device& device, const std::string& path);

// The NDRange of matmul_tiled for n x n matrices, derived from the kernel's
// CL_KERNEL_COMPILE_WORK_GROUP_SIZE (reqd_work_group_size): local (TILE, TILE/WPT), global
// (n, n/WPT). Throws hetflow::UsageError when n is not a positive multiple of TILE.
struct MatmulGeometry {
  std::size_t tile = 0, wpt = 0;
  cl::NDRange global, local;
};
MatmulGeometry matmul_geometry(const cl::Kernel& kernel, const cl::Device& device, int n);

}  // namespace hetflow::native
