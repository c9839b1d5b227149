// hetflow's headers first: they set the OpenCL version before anything includes CL/cl.h.
#include <hetflow/hetflow.hpp>
#include <starpu.h>

#include "peers/starpu_workloads.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "native/native_workloads.hpp"
#include "workloads/barnes_hut_loop.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"

namespace hetflow::peers {
namespace {

namespace wl = hetflow::workloads;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Codelets run on StarPU's threads, called through C, where no exception may pass: the first
// failure is kept here and thrown by the run once its tasks are done.
class Failures {
 public:
  void record(std::string what) {
    std::lock_guard lock(mutex_);
    if (first_.empty()) first_ = std::move(what);
  }
  void throw_if_any() {
    std::lock_guard lock(mutex_);
    if (!first_.empty()) throw Error("StarPU task failed: " + first_);
  }

 private:
  std::mutex mutex_;
  std::string first_;
};

// One kernel of a run: made once for the run's one OpenCL device and shared by its tasks (only
// StarPU's one OpenCL worker sets its arguments, task after task). Its arguments are the task's
// buffers in order, then `nints` ints.
struct Launch {
  const char* name = "";
  cl_kernel kernel = nullptr;
  int ints[2] = {0, 0};
  cl_uint nints = 0;
  std::size_t global[2] = {0, 0};
  Failures* failures = nullptr;
};

// STARPU_OPENCL_ASYNC: enqueue on the worker's queue and return; StarPU tracks the completion
// (a marker event), so the worker can feed the next task meanwhile, as hetflow's launches do.
void launch_opencl(void* buffers[], void* arg) {
  auto& l = *static_cast<Launch*>(arg);
  const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
  cl_int err = CL_SUCCESS;
  cl_uint index = 0;
  for (unsigned b = 0; b < nbuffers && err == CL_SUCCESS; ++b) {
    if (STARPU_VECTOR_GET_OFFSET(buffers[b]) != 0) {
      l.failures->record(std::string(l.name) + ": a buffer with an offset (the workloads register whole vectors)");
      return;
    }
    cl_mem mem = reinterpret_cast<cl_mem>(STARPU_VECTOR_GET_DEV_HANDLE(buffers[b]));
    err = clSetKernelArg(l.kernel, index++, sizeof mem, &mem);
  }
  for (cl_uint i = 0; i < l.nints && err == CL_SUCCESS; ++i)
    err = clSetKernelArg(l.kernel, index++, sizeof(int), &l.ints[i]);
  const std::size_t local[2] = {wl::kStencilLocal, wl::kStencilLocal};
  cl_command_queue queue;
  starpu_opencl_get_current_queue(&queue);
  if (err == CL_SUCCESS)
    err = clEnqueueNDRangeKernel(queue, l.kernel, 2, nullptr, l.global, local, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) l.failures->record(std::string(l.name) + ": " + starpu_opencl_error_string(err));
}

// The host work of one step: generating frame `index`, or summing a result or a snapshot.
struct HostJob {
  int index = 0, width = 0, height = 0;
  double sum = 0;
  Failures* failures = nullptr;
};

float* host_vector(void* buffer) { return reinterpret_cast<float*>(STARPU_VECTOR_GET_PTR(buffer)); }

void generate_cpu(void* buffers[], void* arg) {
  auto& job = *static_cast<HostJob*>(arg);
  try {
    wl::generate_frame(host_vector(buffers[0]), job.width, job.height, job.index);
  } catch (const std::exception& e) {
    job.failures->record("generate frame " + std::to_string(job.index) + ": " + e.what());
  }
}

void sum_cpu(void* buffers[], void* arg) {
  auto& job = *static_cast<HostJob*>(arg);
  try {
    job.sum = wl::host_sum(host_vector(buffers[0]), STARPU_VECTOR_GET_NX(buffers[0]));
  } catch (const std::exception& e) {
    job.failures->record("sum " + std::to_string(job.index) + ": " + e.what());
  }
}

// History-based models, one per codelet, so that the dm* schedulers can place and prefetch. StarPU
// keeps pointers to them until starpu_shutdown and leaves them half torn down after it: each
// Starpu instance starts from fresh ones (std::map nodes do not move).
std::map<std::string, starpu_perfmodel>& perfmodels() {
  static std::map<std::string, starpu_perfmodel> models;
  return models;
}
starpu_perfmodel* perfmodel(const std::string& symbol) {
  auto [it, added] = perfmodels().try_emplace(symbol);
  if (added) {
    std::memset(&it->second, 0, sizeof it->second);
    it->second.type = STARPU_HISTORY_BASED;
    it->second.symbol = it->first.c_str();
  }
  return &it->second;
}

starpu_codelet codelet(const char* name, std::initializer_list<starpu_data_access_mode> modes) {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.name = name;
  cl.nbuffers = static_cast<int>(modes.size());
  int b = 0;
  for (auto m : modes) cl.modes[b++] = m;
  cl.model = perfmodel(std::string("hetflow_peers_") + name);
  return cl;
}
starpu_codelet opencl_codelet(const char* name, std::initializer_list<starpu_data_access_mode> modes) {
  starpu_codelet cl = codelet(name, modes);
  cl.opencl_funcs[0] = launch_opencl;
  cl.opencl_flags[0] = STARPU_OPENCL_ASYNC;
  return cl;
}
starpu_codelet cpu_codelet(const char* name, starpu_cpu_func_t f, starpu_data_access_mode mode) {
  starpu_codelet cl = codelet(name, {mode});
  cl.cpu_funcs[0] = f;
  return cl;
}

// StarPU's numbering of OpenCL devices (src/drivers/opencl/driver_opencl.c of 1.3.10): platforms in
// clGetPlatformIDs order, the "SOCL Platform" skipped, devices of type GPU and ACCELERATOR, plus
// CPU with STARPU_OPENCL_ON_CPUS. -1 when `device` is not among them.
int starpu_opencl_index(cl_device_id device, bool with_cpus) {
  cl_uint nplatforms = 0;
  if (clGetPlatformIDs(0, nullptr, &nplatforms) != CL_SUCCESS) return -1;
  std::vector<cl_platform_id> platforms(nplatforms);
  clGetPlatformIDs(nplatforms, platforms.data(), nullptr);
  const cl_device_type type =
      CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR | (with_cpus ? CL_DEVICE_TYPE_CPU : cl_device_type(0));
  int index = 0;
  for (cl_platform_id p : platforms) {
    char name[1024] = "";
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, nullptr);
    if (std::strcmp(name, "SOCL Platform") == 0) continue;
    cl_uint n = 0;
    if (clGetDeviceIDs(p, type, 0, nullptr, &n) != CL_SUCCESS) continue;
    std::vector<cl_device_id> devices(n);
    clGetDeviceIDs(p, type, n, devices.data(), nullptr);
    for (cl_device_id d : devices) {
      if (d == device) return index;
      ++index;
    }
  }
  return -1;
}

// The workers run while a workload does; paused again when it returns or throws.
class Running {
 public:
  explicit Running(Starpu& s) : s_(s) { s_.resume(); }
  ~Running() { s_.pause(); }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  Starpu& s_;
};

// A kernel file built by StarPU for its device, and the kernels made from it; released after the
// tasks using them (declared before the Registry, which waits for them).
class Program {
 public:
  Program(const std::string& file, const std::string& kernels_dir, const std::string& options = native::kBuildOptions) {
    const std::string path = native::locate_kernel_file(file, kernels_dir);
    if (starpu_opencl_load_opencl_from_file(path.c_str(), &program_, options.c_str()) != 0)
      throw Error("StarPU could not build " + path + " with '" + options +
                  "' (unset STARPU_SILENT to see its build log)");
  }
  ~Program() {
    for (cl_kernel k : kernels_) starpu_opencl_release_kernel(k);
    starpu_opencl_unload_opencl(&program_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  cl_kernel kernel(const char* name, int devid) {
    cl_kernel k;
    cl_command_queue queue;
    const cl_int err = starpu_opencl_load_kernel(&k, &queue, &program_, name, devid);
    if (err != CL_SUCCESS) throw OpenCLError(err, std::string("starpu_opencl_load_kernel(") + name + ")");
    kernels_.push_back(k);
    return k;
  }

 private:
  starpu_opencl_program program_{};
  std::vector<cl_kernel> kernels_;
};

// Host images from starpu_malloc (pinned where StarPU's drivers can use it), zero-filled.
class HostImages {
 public:
  float* make(std::size_t count) {
    void* p = nullptr;
    if (starpu_malloc(&p, count * sizeof(float)) != 0 || !p)
      throw Error("starpu_malloc of " + std::to_string(count * sizeof(float)) + " bytes failed");
    std::memset(p, 0, count * sizeof(float));
    images_.push_back(p);
    return static_cast<float*>(p);
  }
  ~HostImages() {
    for (void* p : images_) starpu_free(p);
  }

 private:
  std::vector<void*> images_;
};

// Registered vectors of floats; unregistered without bringing anything home (the runs take their
// outputs before), after every task is done.
class Registry {
 public:
  // home == nullptr: data that only lives where StarPU puts it (hetflow's device tiles).
  starpu_data_handle_t vector(float* home, std::size_t count) { return vector_of(home, count, sizeof(float)); }
  // Data the tasks only read may be registered from a const image: StarPU never writes to it.
  template <class T>
  starpu_data_handle_t read_only(const T* home, std::size_t count) {
    return vector_of(const_cast<T*>(home), count, sizeof(T));
  }
  starpu_data_handle_t vector_of(void* home, std::size_t count, std::size_t elemsize) {
    if (count > std::numeric_limits<uint32_t>::max())
      throw UsageError("StarPU vectors hold at most 2^32 - 1 elements (asked for " + std::to_string(count) + ")");
    starpu_data_handle_t h = nullptr;
    if (home)
      starpu_vector_data_register(&h, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(home), static_cast<uint32_t>(count),
                                  elemsize);
    else
      starpu_vector_data_register(&h, -1, 0, static_cast<uint32_t>(count), elemsize);
    handles_.push_back(h);
    return h;
  }
  ~Registry() {
    starpu_task_wait_for_all();  // tasks submitted before a throw still use the handles
    for (auto h : handles_) starpu_data_unregister_no_coherency(h);
  }

 private:
  std::vector<starpu_data_handle_t> handles_;
};

void submitted(int rc, const char* what) {
  if (rc != 0) throw Error(std::string("starpu_task_insert(") + what + ") failed: " + std::strerror(-rc));
}

void wait_all(Failures& failures) {
  if (starpu_task_wait_for_all() != 0) throw Error("starpu_task_wait_for_all failed");
  failures.throw_if_any();
}

// Copies a registered vector's current value into `out` (fetching it to main memory if needed).
void read_back(starpu_data_handle_t h, std::vector<float>& out) {
  if (starpu_data_acquire(h, STARPU_R) != 0) throw Error("starpu_data_acquire failed");
  const auto* p = reinterpret_cast<const float*>(starpu_vector_get_local_ptr(h));
  out.assign(p, p + starpu_vector_get_nx(h));
  starpu_data_release(h);
}

double ordered_sum(const std::vector<HostJob>& jobs) {
  double s = 0;
  for (const auto& j : jobs) s += j.sum;
  return s;
}

}  // namespace

// ---- Starpu ------------------------------------------------------------------------------------

Starpu::Starpu(const DeviceInfo& device, const std::string& scheduler) {
  const bool cpu_device = (device.type & CL_DEVICE_TYPE_CPU) != 0;
  // StarPU numbers only the device types these ask for; they are set here so that the index
  // computed below is StarPU's.
  setenv("STARPU_OPENCL_ON_CPUS", cpu_device ? "1" : "0", 1);
  unsetenv("STARPU_OPENCL_ONLY_ON_CPUS");
  setenv("STARPU_SILENT", "1", 0);
  const int index = starpu_opencl_index(device.device(), cpu_device);
  if (index < 0) throw DeviceError("StarPU does not number OpenCL device '" + device.name + "' among its devices");
  perfmodels().clear();

  starpu_conf conf;
  starpu_conf_init(&conf);
  conf.sched_policy_name = scheduler.c_str();
  conf.ncuda = 0;
  conf.nopencl = 1;
  conf.use_explicit_workers_opencl_gpuid = 1;
  conf.workers_opencl_gpuid[0] = static_cast<unsigned>(index);
  if (starpu_init(&conf) != 0) throw Error("starpu_init failed (scheduler '" + scheduler + "')");

  cl_device_id used = nullptr;
  if (starpu_opencl_worker_get_count() == 1) {
    devid_ = starpu_worker_get_devid(starpu_worker_get_by_type(STARPU_OPENCL_WORKER, 0));
    starpu_opencl_get_device(devid_, &used);
  }
  if (used != device.device()) {
    const unsigned count = starpu_opencl_worker_get_count();
    starpu_shutdown();
    throw DeviceError("StarPU started " + std::to_string(count) + " OpenCL worker(s), not one on '" + device.name +
                      "' (STARPU_NOPENCL or STARPU_WORKERS_OPENCLID in the environment override the choice)");
  }
  // The context starpu_init makes is number 0 (StarPU's STARPU_GLOBAL_SCHED_CTX, not in its headers).
  scheduler_ = starpu_sched_ctx_get_sched_policy(0)->policy_name;
  // StarPU falls back to its default policy, with only a warning, for a name it does not know.
  const char* env_scheduler = std::getenv("STARPU_SCHED");
  const std::string asked = env_scheduler && *env_scheduler ? env_scheduler : scheduler;
  if (scheduler_ != asked) {
    starpu_shutdown();
    throw UsageError("StarPU has no scheduler '" + asked + "' (it started '" + scheduler_ + "')");
  }
  char worker[256] = "?";
  starpu_worker_get_name(starpu_worker_get_by_type(STARPU_OPENCL_WORKER, 0), worker, sizeof worker);
  description_ = "StarPU " + std::to_string(STARPU_MAJOR_VERSION) + "." + std::to_string(STARPU_MINOR_VERSION) + "." +
                 std::to_string(STARPU_RELEASE_VERSION) + ", " + std::to_string(starpu_cpu_worker_get_count()) +
                 " CPU worker(s), OpenCL worker '" + worker + "'";
  // How many OpenCL tasks the worker keeps in flight (0: it waits for each): on a CPU device its
  // polling for their completion competes with the device's own threads.
  const char* pipeline = std::getenv("STARPU_OPENCL_PIPELINE");
  description_ += std::string(", STARPU_OPENCL_PIPELINE=") + (pipeline && *pipeline ? pipeline : "default");
  pause();
}

Starpu::~Starpu() {
  resume();
  starpu_shutdown();
}

void Starpu::resume() {
  if (!paused_) return;
  starpu_resume();
  paused_ = false;
}

void Starpu::pause() {
  if (paused_) return;
  starpu_pause();
  paused_ = true;
}

std::vector<std::string> starpu_schedulers() { return {"eager", "prio", "ws", "lws", "dm", "dmda", "dmdas"}; }

// ---- Sobel -------------------------------------------------------------------------------------

wl::RunResult sobel(Starpu& starpu, const StarpuSobel& run) {
  if (run.width <= 0 || run.height <= 0 || run.frames <= 0 || run.slots <= 0)
    throw UsageError("StarPU sobel: width, height, frames and slots must be positive (got " +
                     std::to_string(run.width) + "x" + std::to_string(run.height) + ", " + std::to_string(run.frames) +
                     " frames, " + std::to_string(run.slots) + " slots)");
  const std::size_t count = std::size_t(run.width) * std::size_t(run.height);
  const int w = run.width, h = run.height;
  Running running(starpu);
  Failures failures;
  Program program("sobel.cl", run.kernels_dir);
  const int dev = starpu.opencl_devid();
  const std::size_t global[2] = {wl::round_up(std::size_t(w), wl::kStencilLocal),
                                 wl::round_up(std::size_t(h), wl::kStencilLocal)};
  Launch rows{"sobel_rows", program.kernel("sobel_rows", dev), {w, h}, 2, {global[0], global[1]}, &failures};
  Launch col_smooth{"sobel_col_smooth", program.kernel("sobel_col_smooth", dev), {w, h}, 2, {global[0], global[1]},
                    &failures};
  Launch col_diff{"sobel_col_diff", program.kernel("sobel_col_diff", dev), {w, h}, 2, {global[0], global[1]},
                  &failures};
  Launch magnitude{"sobel_magnitude", program.kernel("sobel_magnitude", dev), {w, h}, 2, {global[0], global[1]},
                   &failures};
  starpu_codelet cl_rows = opencl_codelet("sobel_rows", {STARPU_R, STARPU_W, STARPU_W});
  starpu_codelet cl_col_smooth = opencl_codelet("sobel_col_smooth", {STARPU_R, STARPU_W});
  starpu_codelet cl_col_diff = opencl_codelet("sobel_col_diff", {STARPU_R, STARPU_W});
  starpu_codelet cl_magnitude = opencl_codelet("sobel_magnitude", {STARPU_R, STARPU_R, STARPU_W});
  starpu_codelet cl_generate = cpu_codelet("sobel_generate", generate_cpu, STARPU_W);
  starpu_codelet cl_consume = cpu_codelet("sobel_consume", sum_cpu, STARPU_R);

  HostImages images;
  std::vector<float*> in_images, out_images;
  for (int s = 0; s < run.slots; ++s) {
    in_images.push_back(images.make(count));
    out_images.push_back(images.make(count));
  }
  std::vector<HostJob> generate(std::size_t(run.frames)), consume(std::size_t(run.frames));
  for (int i = 0; i < run.frames; ++i) {
    generate[std::size_t(i)] = {i, w, h, 0.0, &failures};
    consume[std::size_t(i)] = {i, w, h, 0.0, &failures};
  }
  Registry registry;  // after everything its tasks use: unregistered (and waited for) first
  std::vector<starpu_data_handle_t> in, out;
  for (int s = 0; s < run.slots; ++s) {
    in.push_back(registry.vector(in_images[std::size_t(s)], count));
    out.push_back(registry.vector(out_images[std::size_t(s)], count));
  }
  const auto row_diff = registry.vector(nullptr, count), row_smooth = registry.vector(nullptr, count);
  const auto gx = registry.vector(nullptr, count), gy = registry.vector(nullptr, count);

  auto launch_frame = [&](int slot) {
    const std::size_t s = std::size_t(slot);
    submitted(starpu_task_insert(&cl_rows, STARPU_R, in[s], STARPU_W, row_diff, STARPU_W, row_smooth,
                                 STARPU_CL_ARGS_NFREE, &rows, sizeof rows, 0),
              "sobel_rows");
    submitted(starpu_task_insert(&cl_col_smooth, STARPU_R, row_diff, STARPU_W, gx, STARPU_CL_ARGS_NFREE, &col_smooth,
                                 sizeof col_smooth, 0),
              "sobel_col_smooth");
    submitted(starpu_task_insert(&cl_col_diff, STARPU_R, row_smooth, STARPU_W, gy, STARPU_CL_ARGS_NFREE, &col_diff,
                                 sizeof col_diff, 0),
              "sobel_col_diff");
    submitted(starpu_task_insert(&cl_magnitude, STARPU_R, gx, STARPU_R, gy, STARPU_W, out[s], STARPU_CL_ARGS_NFREE,
                                 &magnitude, sizeof magnitude, 0),
              "sobel_magnitude");
  };
  // Warm-up (untimed), as hetflow's and the native versions: every kernel once per slot, which
  // also has StarPU allocate every device buffer; and the host codelets with their transfers, whose
  // first use loads their performance models (the timed loop overwrites what they leave).
  std::vector<HostJob> warm_up(std::size_t(run.slots), HostJob{0, w, h, 0.0, &failures});
  for (int s = 0; s < run.slots; ++s) {
    submitted(starpu_task_insert(&cl_generate, STARPU_W, in[std::size_t(s)], STARPU_CL_ARGS_NFREE,
                                 &warm_up[std::size_t(s)], sizeof(HostJob), 0),
              "sobel_generate");
    launch_frame(s);
    submitted(starpu_task_insert(&cl_consume, STARPU_R, out[std::size_t(s)], STARPU_CL_ARGS_NFREE,
                                 &warm_up[std::size_t(s)], sizeof(HostJob), 0),
              "sobel_consume");
  }
  wait_all(failures);

  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < run.frames; ++i) {
    const int slot = i % run.slots;
    submitted(starpu_task_insert(&cl_generate, STARPU_W, in[std::size_t(slot)], STARPU_CL_ARGS_NFREE,
                                 &generate[std::size_t(i)], sizeof(HostJob), 0),
              "sobel_generate");
    launch_frame(slot);
    submitted(starpu_task_insert(&cl_consume, STARPU_R, out[std::size_t(slot)], STARPU_CL_ARGS_NFREE,
                                 &consume[std::size_t(i)], sizeof(HostJob), 0),
              "sobel_consume");
  }
  wait_all(failures);
  wl::RunResult r;
  r.seconds = seconds_since(t0);
  r.frames = run.frames;
  r.checksum = ordered_sum(consume);
  read_back(out[std::size_t((run.frames - 1) % run.slots)], r.output);
  return r;
}

// ---- Jacobi ------------------------------------------------------------------------------------

wl::RunResult jacobi(Starpu& starpu, int n, int iterations, int copy_every, const std::string& kernels_dir) {
  if (n <= 0 || iterations < 0 || copy_every <= 0)
    throw UsageError(
        "StarPU jacobi: n and copy_every must be positive and iterations non-negative (got n = " + std::to_string(n) +
        ", iterations = " + std::to_string(iterations) + ", copy_every = " + std::to_string(copy_every) + ")");
  const std::size_t count = std::size_t(n) * std::size_t(n);
  Running running(starpu);
  Failures failures;
  Program program("jacobi.cl", kernels_dir);
  const std::size_t g = wl::round_up(std::size_t(n), wl::kStencilLocal);
  Launch step{"jacobi_step", program.kernel("jacobi_step", starpu.opencl_devid()), {n, 0}, 1, {g, g}, &failures};
  starpu_codelet cl_step = opencl_codelet("jacobi_step", {STARPU_R, STARPU_W});
  starpu_codelet cl_sum = cpu_codelet("jacobi_sum", sum_cpu, STARPU_R);
  // As many grids as hetflow's version rotates (pipelines.cpp says why it needs them); here a
  // step that overwrites a grid also waits for the host sum reading it, StarPU keeping one value
  // per handle.
  int grids = 2;
  while (copy_every % grids == 0) ++grids;
  HostImages images;
  std::vector<float*> grid_images;
  for (int k = 0; k < grids; ++k) grid_images.push_back(images.make(count));
  std::vector<HostJob> sums(std::size_t(iterations / copy_every));
  for (std::size_t k = 0; k < sums.size(); ++k) sums[k] = {int(k), n, n, 0.0, &failures};
  Registry registry;
  std::vector<starpu_data_handle_t> grid;
  for (int k = 0; k < grids; ++k) grid.push_back(registry.vector(grid_images[std::size_t(k)], count));

  auto submit_step = [&](int from, int to) {
    submitted(starpu_task_insert(&cl_step, STARPU_R, grid[std::size_t(from)], STARPU_W, grid[std::size_t(to)],
                                 STARPU_CL_ARGS_NFREE, &step, sizeof step, 0),
              "jacobi_step");
  };
  // Warm-up (untimed): the kernel on every grid, and the host codelet with its transfer.
  for (int k = 0; k < grids; ++k) submit_step(k, (k + 1) % grids);
  HostJob warm_up{0, n, n, 0.0, &failures};
  submitted(starpu_task_insert(&cl_sum, STARPU_R, grid[0], STARPU_CL_ARGS_NFREE, &warm_up, sizeof warm_up, 0),
            "jacobi_sum");
  wait_all(failures);
  {
    std::vector<float> init;
    wl::jacobi_initial_grid(init, n);
    if (starpu_data_acquire(grid[0], STARPU_W) != 0) throw Error("starpu_data_acquire failed");
    std::copy(init.begin(), init.end(), reinterpret_cast<float*>(starpu_vector_get_local_ptr(grid[0])));
    starpu_data_release(grid[0]);
  }

  const auto t0 = std::chrono::steady_clock::now();
  int cur = 0;
  std::size_t snapshots = 0;
  for (int it = 0; it < iterations; ++it) {
    const int next = (cur + 1) % grids;
    submit_step(cur, next);
    cur = next;
    if ((it + 1) % copy_every != 0) continue;
    submitted(starpu_task_insert(&cl_sum, STARPU_R, grid[std::size_t(cur)], STARPU_CL_ARGS_NFREE, &sums[snapshots++],
                                 sizeof(HostJob), 0),
              "jacobi_sum");
  }
  wl::RunResult r;
  wait_all(failures);
  read_back(grid[std::size_t(cur)], r.output);  // the final D2H, when the last step was no snapshot
  r.seconds = seconds_since(t0);
  r.checksum = ordered_sum(sums);
  return r;
}

// ---- Barnes-Hut loop ---------------------------------------------------------------------------

namespace {

// What every chunk task of one run shares; the counters say which implementation StarPU chose.
struct BhShared {
  float eps2 = 0;
  cl_kernel kernel = nullptr;
  Failures* failures = nullptr;
  std::atomic<std::size_t> cpu_tasks{0}, device_tasks{0}, device_iterations{0};
};

struct BhChunk {
  std::size_t begin = 0, end = 0;
  BhShared* shared = nullptr;
};

std::string chunk_name(const BhChunk& c) {
  return "bh_force [" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")";
}

template <class T>
const T* buffer_of(void* buffer) {
  return reinterpret_cast<const T*>(STARPU_VECTOR_GET_PTR(buffer));
}

void bh_force_cpu(void* buffers[], void* arg) {
  auto& c = *static_cast<BhChunk*>(arg);
  wl::BarnesHutLoop::Arrays a;
  a.pos_mass = buffer_of<wl::Vec4>(buffers[0]);
  a.tree_mass = buffer_of<wl::Vec4>(buffers[1]);
  a.tree_open2 = buffer_of<float>(buffers[2]);
  a.tree_links = buffer_of<wl::Int2>(buffers[3]);
  a.eps2 = c.shared->eps2;
  wl::BarnesHutLoop::forces(a, c.begin, c.end, reinterpret_cast<wl::Vec4*>(STARPU_VECTOR_GET_PTR(buffers[4])));
  c.shared->cpu_tasks.fetch_add(1, std::memory_order_relaxed);
}

// STARPU_OPENCL_ASYNC, as the other workloads' launches.
void bh_force_opencl(void* buffers[], void* arg) {
  auto& c = *static_cast<BhChunk*>(arg);
  BhShared& s = *c.shared;
  // The kernel indexes the accelerations by body, as hetflow's launch over the whole tile does: the
  // chunk's piece must sit at its place in the whole vector's device buffer. It does when the whole
  // vector was on the device when it was partitioned; a piece StarPU allocated alone would not.
  for (unsigned b = 0; b < 4; ++b)
    if (STARPU_VECTOR_GET_OFFSET(buffers[b]) != 0) {
      s.failures->record(chunk_name(c) + ": an input with an offset (they are registered whole)");
      return;
    }
  if (STARPU_VECTOR_GET_OFFSET(buffers[4]) != c.begin * sizeof(wl::Vec4)) {
    s.failures->record(chunk_name(c) + ": its accelerations are not a window of the whole vector's device buffer");
    return;
  }
  cl_int err = CL_SUCCESS;
  for (cl_uint b = 0; b < 5 && err == CL_SUCCESS; ++b) {
    cl_mem mem = reinterpret_cast<cl_mem>(STARPU_VECTOR_GET_DEV_HANDLE(buffers[b]));
    err = clSetKernelArg(s.kernel, b, sizeof mem, &mem);
  }
  const int limit = static_cast<int>(c.end);
  if (err == CL_SUCCESS) err = clSetKernelArg(s.kernel, 5, sizeof limit, &limit);
  if (err == CL_SUCCESS) err = clSetKernelArg(s.kernel, 6, sizeof s.eps2, &s.eps2);
  const std::size_t offset = c.begin, global = wl::round_up_to(c.end - c.begin, wl::kLoopLocal), local = wl::kLoopLocal;
  cl_command_queue queue;
  starpu_opencl_get_current_queue(&queue);
  if (err == CL_SUCCESS)
    err = clEnqueueNDRangeKernel(queue, s.kernel, 1, &offset, &global, &local, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) {
    s.failures->record(chunk_name(c) + ": " + starpu_opencl_error_string(err));
    return;
  }
  s.device_tasks.fetch_add(1, std::memory_order_relaxed);
  s.device_iterations.fetch_add(c.end - c.begin, std::memory_order_relaxed);
}

// A vector cut into consecutive pieces of the given sizes; gathered whole again (after its tasks)
// before the Registry unregisters it, which StarPU refuses for a partitioned handle.
class Pieces {
 public:
  Pieces(starpu_data_handle_t whole, std::vector<uint32_t> sizes) : whole_(whole), sizes_(std::move(sizes)) {
    starpu_data_filter f;
    std::memset(&f, 0, sizeof f);
    f.filter_func = starpu_vector_filter_list;
    f.nchildren = static_cast<unsigned>(sizes_.size());
    f.filter_arg_ptr = sizes_.data();
    starpu_data_partition(whole_, &f);
  }
  ~Pieces() {
    starpu_task_wait_for_all();
    starpu_data_unpartition(whole_, STARPU_MAIN_RAM);
  }
  Pieces(const Pieces&) = delete;
  Pieces& operator=(const Pieces&) = delete;

  starpu_data_handle_t operator[](std::size_t k) const {
    return starpu_data_get_child(whole_, static_cast<unsigned>(k));
  }

 private:
  starpu_data_handle_t whole_;
  std::vector<uint32_t> sizes_;
};

}  // namespace

StarpuLoopResult barnes_hut(Starpu& starpu, const wl::BarnesHutLoop& loop, const StarpuLoop& run) {
  const wl::BarnesHutLoop::Arrays a = loop.arrays();
  if (run.steps <= 0)
    throw UsageError("StarPU barnes-hut: steps must be positive (got " + std::to_string(run.steps) + ")");
  const std::size_t n = a.n;
  const std::size_t chunk = std::min(n, run.chunk ? run.chunk : std::max<std::size_t>(64, n / 64));
  Running running(starpu);
  Failures failures;
  Program program("barnes_hut.cl", run.kernels_dir,
                  std::string(wl::BarnesHutLoop::build_options(loop.params().fast_math)) + " " + native::kBuildOptions);
  BhShared shared;
  shared.eps2 = a.eps2;
  shared.kernel = program.kernel("bh_force", starpu.opencl_devid());
  shared.failures = &failures;
  starpu_codelet cl = codelet("bh_force", {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W});
  cl.cpu_funcs[0] = bh_force_cpu;
  cl.opencl_funcs[0] = bh_force_opencl;
  cl.opencl_flags[0] = STARPU_OPENCL_ASYNC;
  cl.where = run.sides == LoopSides::cpu      ? STARPU_CPU
             : run.sides == LoopSides::device ? STARPU_OPENCL
                                              : STARPU_CPU | STARPU_OPENCL;

  const float nan = std::numeric_limits<float>::quiet_NaN();
  const wl::Vec4 unwritten{nan, nan, nan, nan};  // what no iteration writes, as BarnesHutLoop::clear_output()
  // A std::vector, not starpu_malloc: that aligns to 8 bytes by default, a Vec4 needs 16.
  std::vector<wl::Vec4> acc(n, unwritten);
  std::vector<uint32_t> sizes;
  std::vector<BhChunk> chunks;
  for (std::size_t begin = 0; begin < n; begin += chunk) {
    const std::size_t end = std::min(n, begin + chunk);
    sizes.push_back(static_cast<uint32_t>(end - begin));
    chunks.push_back({begin, end, &shared});
  }
  Registry registry;
  const auto pos = registry.read_only(a.pos_mass, n);
  const auto mass = registry.read_only(a.tree_mass, a.tree_capacity);
  const auto open2 = registry.read_only(a.tree_open2, a.tree_capacity);
  const auto links = registry.read_only(a.tree_links, a.tree_capacity);
  const auto whole = registry.vector_of(acc.data(), n, sizeof(wl::Vec4));
  // Bodies and tree go to the device once, untimed, as hetflow's loop finds them there after its
  // first call; the accelerations too, so that their pieces are windows of its buffer (see
  // bh_force_opencl).
  const unsigned device_node = starpu_worker_get_memory_node(starpu_worker_get_by_type(STARPU_OPENCL_WORKER, 0));
  for (auto h : {pos, mass, open2, links, whole})
    if (const int rc = starpu_data_fetch_on_node(h, device_node, 0); rc != 0)
      throw Error("StarPU could not move the Barnes-Hut data to its device (starpu_data_fetch_on_node: " +
                  std::to_string(rc) + ")");
  Pieces pieces(whole, sizes);

  // Untimed, before every call: NaN in every piece, as the hetflow rows' clear_output(), so that
  // what a call leaves is its own work. Writing them in host memory drops the device's copies,
  // which the tasks, writing them whole, do not need.
  auto clear = [&] {
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      if (const int rc = starpu_data_acquire(pieces[k], STARPU_W); rc != 0)
        throw Error("starpu_data_acquire(W) of " + chunk_name(chunks[k]) + " failed: " + std::to_string(rc));
      auto* p = reinterpret_cast<wl::Vec4*>(starpu_vector_get_local_ptr(pieces[k]));
      std::fill(p, p + starpu_vector_get_nx(pieces[k]), unwritten);
      starpu_data_release(pieces[k]);
    }
  };
  auto call = [&] {
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      submitted(starpu_task_insert(&cl, STARPU_R, pos, STARPU_R, mass, STARPU_R, open2, STARPU_R, links, STARPU_W,
                                   pieces[k], STARPU_CL_ARGS_NFREE, &chunks[k], sizeof(BhChunk), 0),
                "bh_force");
      // Home as soon as its task ends, while the others run, as parallel_for brings back a
      // device chunk's writes.
      if (const int rc = starpu_data_fetch_on_node(pieces[k], STARPU_MAIN_RAM, 1); rc != 0)
        throw Error("starpu_data_fetch_on_node of " + chunk_name(chunks[k]) + " failed: " + std::to_string(rc));
    }
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      if (const int rc = starpu_data_acquire(pieces[k], STARPU_R); rc != 0)
        throw Error("starpu_data_acquire(R) of " + chunk_name(chunks[k]) + " failed: " + std::to_string(rc));
      starpu_data_release(pieces[k]);
    }
    failures.throw_if_any();
  };
  // Untimed: StarPU's first launches, and the dm* schedulers' models loaded.
  clear();
  call();
  shared.device_iterations = 0;
  StarpuLoopResult r;
  for (int step = 0; step < run.steps; ++step) {
    clear();
    const auto t0 = std::chrono::steady_clock::now();
    call();
    r.seconds.push_back(seconds_since(t0));
  }
  r.output = acc;  // every piece was last acquired in host memory, where `acc` is their home
  r.cpu_tasks = shared.cpu_tasks;
  r.device_tasks = shared.device_tasks;
  r.device_iterations = shared.device_iterations;
  return r;
}

}  // namespace hetflow::peers
