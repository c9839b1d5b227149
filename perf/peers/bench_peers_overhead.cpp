// perf/peers: what a task costs in StarPU (Debian's libstarpu 1.3, its OpenCL driver) against a
// request in hetflow, in one process, interleaved, on the same device (issue "Side by side with
// StarPU"). Three chains of n tasks on one 4-byte datum, each task depending on the one before:
//   empty OpenCL kernel   StarPU: an OpenCL codelet (launch + wait, as StarPU's examples do);
//                         hetflow: launch(k, io(x))
//   empty CPU task        StarPU: a CPU codelet;  hetflow: host_task(io(x))
//   CPU <-> device        StarPU: a CPU task then an OpenCL task on the datum, StarPU moving its
//                         4 bytes each way; hetflow: host_task, move_to, launch, move_from
// Per-task (per-pair for the last row) microseconds, median of the runs. The kernel chain also runs
// as raw OpenCL (perf/native/raw_requests.hpp: in-order queue, each kernel waiting on the one
// before by its event, no profiling): the driver's own floor, which neither runtime can go below.
//   bench_peers_overhead [tasks per run = 5000] [runs = 5]
// HETFLOW_DEVICE picks hetflow's device; StarPU is started on OpenCL CPU devices too when the
// device hetflow picked is a CPU (STARPU_OPENCL_ON_CPUS=1), with no CUDA workers.
// hetflow first: it sets the OpenCL version its headers need before anything includes CL/cl.h.
#include <hetflow/hetflow.hpp>
#include <starpu.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <vector>
#include "../bench_timing.hpp"
#include "native/raw_requests.hpp"

using namespace hetflow;

namespace {

using bench::median;
using bench::seconds_of;

const char* const kernel_source = "__kernel void empty_kernel(__global float* x) { (void)x; }";

starpu_opencl_program starpu_program;

void empty_opencl(void* buffers[], void*) {
  cl_mem buf = reinterpret_cast<cl_mem>(STARPU_VECTOR_GET_DEV_HANDLE(buffers[0]));
  const int devid = starpu_worker_get_devid(starpu_worker_get_id());
  cl_kernel kernel;
  cl_command_queue queue;
  if (starpu_opencl_load_kernel(&kernel, &queue, &starpu_program, "empty_kernel", devid) != CL_SUCCESS) STARPU_ABORT();
  clSetKernelArg(kernel, 0, sizeof buf, &buf);
  const size_t global = 1;
  cl_event ev;
  if (clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, &ev) != CL_SUCCESS)
    STARPU_ABORT();
  clWaitForEvents(1, &ev);
  clReleaseEvent(ev);
  starpu_opencl_release_kernel(kernel);
}

void empty_cpu(void*[], void*) {}

struct StarPU {
  StarPU(bool opencl_on_cpus) {
    setenv("STARPU_NCUDA", "0", 0);
    if (opencl_on_cpus) setenv("STARPU_OPENCL_ON_CPUS", "1", 0);
    setenv("STARPU_SILENT", "1", 0);
    if (starpu_init(nullptr) != 0) throw std::runtime_error("starpu_init failed");
    if (starpu_opencl_worker_get_count() == 0) {
      starpu_shutdown();
      throw std::runtime_error("StarPU found no OpenCL device (STARPU_NOPENCL, STARPU_OPENCL_ON_CPUS)");
    }
    if (starpu_opencl_load_opencl_from_string(kernel_source, &starpu_program, nullptr) != 0)
      throw std::runtime_error("StarPU could not build the empty kernel");
    starpu_codelet_init(&opencl_cl);
    opencl_cl.opencl_funcs[0] = empty_opencl;
    opencl_cl.nbuffers = 1;
    opencl_cl.modes[0] = STARPU_RW;
    starpu_codelet_init(&cpu_cl);
    cpu_cl.cpu_funcs[0] = empty_cpu;
    cpu_cl.nbuffers = 1;
    cpu_cl.modes[0] = STARPU_RW;
    starpu_vector_data_register(&handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&x), 1, sizeof x);
    starpu_pause();
  }
  ~StarPU() {
    starpu_resume();
    starpu_data_unregister(handle);
    starpu_opencl_unload_opencl(&starpu_program);
    starpu_shutdown();
  }
  // StarPU's workers poll for work while it runs: between its own timings they are paused, so
  // that they do not take the cores from hetflow's timings (on 2 cores, hetflow's round trips ran
  // 10x slower beside idle, unpaused StarPU workers).
  template <class F>
  void timed_section(F&& submit) {
    starpu_resume();
    submit();
    starpu_task_wait_for_all();
    starpu_pause();
  }
  void chain(starpu_codelet* cl, int n) {
    timed_section([&] {
      for (int i = 0; i < n; ++i)
        if (starpu_task_insert(cl, STARPU_RW, handle, 0) != 0) throw std::runtime_error("starpu_task_insert failed");
    });
  }
  void kernels(int n) { chain(&opencl_cl, n); }
  void host_tasks(int n) { chain(&cpu_cl, n); }
  void round_trips(int n) {
    timed_section([&] {
      for (int i = 0; i < n; ++i) {
        starpu_task_insert(&cpu_cl, STARPU_RW, handle, 0);
        starpu_task_insert(&opencl_cl, STARPU_RW, handle, 0);
      }
    });
  }
  float x = 1.0f;
  starpu_data_handle_t handle = nullptr;
  starpu_codelet opencl_cl{}, cpu_cl{};
};

struct Hetflow {
  Hetflow() : k(c.kernel_from_source(kernel_source, "empty_kernel")), x(c.tile<float>(1, "x")) { x[0] = 1.0f; }
  void kernels(int n) {
    for (int i = 0; i < n; ++i) c.launch(k, Range(1), io(x));
    c.wait_all();
  }
  void host_tasks(int n) {
    for (int i = 0; i < n; ++i)
      c.host_task(
          "empty", [] {}, io(x));
    c.wait_all();
  }
  void round_trips(int n) {
    for (int i = 0; i < n; ++i) {
      c.host_task(
          "empty", [] {}, io(x));
      c.move_to(x);
      c.launch(k, Range(1), io(x));
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
  const int n = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  if (n < 10 || runs < 1) {
    std::fprintf(stderr, "usage: bench_peers_overhead [tasks-per-run >= 10] [runs >= 1]\n");
    return 2;
  }
  try {
    Hetflow hf;
    const bool cpu_device = (hf.c.device().type & CL_DEVICE_TYPE_CPU) != 0;
    StarPU sp(cpu_device);
    native::RawRequests raw(hf.c.device(), false);
    char starpu_device[256] = "?";
    starpu_worker_get_name(starpu_worker_get_by_type(STARPU_OPENCL_WORKER, 0), starpu_device, sizeof starpu_device);
    std::printf(
        "perf/peers overhead: hetflow on %s; StarPU %d.%d.%d (%u CPU workers, OpenCL worker '%s'); %d tasks per "
        "run, median of %d runs\n",
        hf.c.device().name.c_str(), STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION, STARPU_RELEASE_VERSION,
        starpu_cpu_worker_get_count(), starpu_device, n, runs);
    std::vector<double> t[6], raw_kernels;
    const int pairs = std::max(1, n / 4);
    for (int r = 0; r < runs + 1; ++r) {  // the first run warms up (builds, first transfers)
      const double times[] = {
          seconds_of([&] { sp.kernels(n); }),         seconds_of([&] { hf.kernels(n); }),
          seconds_of([&] { sp.host_tasks(n); }),      seconds_of([&] { hf.host_tasks(n); }),
          seconds_of([&] { sp.round_trips(pairs); }), seconds_of([&] { hf.round_trips(pairs); }),
      };
      const double raw_time = seconds_of([&] { raw.kernels(n); });
      if (r == 0) continue;
      raw_kernels.push_back(raw_time);
      for (int i = 0; i < 6; ++i) t[i].push_back(times[i]);
    }
    std::printf("\n%-36s %12s %12s %8s %14s\n", "task", "StarPU us", "hetflow us", "ratio", "raw OpenCL us");
    const struct {
      const char* name;
      int count;
    } rows[] = {{"empty OpenCL kernel (chain)", n},
                {"empty CPU task (chain)", n},
                {"CPU task <-> kernel, 4 bytes (pair)", pairs}};
    for (int i = 0; i < 3; ++i) {
      const double s = median(t[2 * i]) / rows[i].count * 1e6, h = median(t[2 * i + 1]) / rows[i].count * 1e6;
      if (i == 0)
        std::printf("%-36s %12.2f %12.2f %8.2f %14.2f\n", rows[i].name, s, h, s / h, median(raw_kernels) / n * 1e6);
      else
        std::printf("%-36s %12.2f %12.2f %8.2f %14s\n", rows[i].name, s, h, s / h, "-");
    }
    std::printf(
        "(ratio = StarPU / hetflow: above 1, hetflow is faster; raw OpenCL: the same chain of kernels\n"
        " enqueued by hand, what the driver itself costs)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_peers_overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}
