#include "native/native_workloads.hpp"

#include "native/ordered_consumer.hpp"

#include <hetflow/errors.hpp>

#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"
#include "workloads/sobel_sizing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

namespace hetflow::native {

namespace wl = hetflow::workloads;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
using Events = std::vector<cl::Event>;

std::vector<std::string> env_kernel_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("HETFLOW_KERNEL_PATH"); env && *env) {
    std::stringstream ss(env);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty()) dirs.push_back(dir);
  }
  return dirs;
}

// Runs f, turning the bindings' cl::Error into hetflow::OpenCLError (what() of a cl::Error is the
// name of the OpenCL function that failed).
template <class F>
auto checked(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const cl::Error& e) {
    throw OpenCLError(e.err(), e.what());
  }
}

double device_seconds(const Events& events) {
  double s = 0;
  for (const auto& e : events) {
    const auto start = e.getProfilingInfo<CL_PROFILING_COMMAND_START>();
    const auto end = e.getProfilingInfo<CL_PROFILING_COMMAND_END>();
    if (end > start) s += static_cast<double>(end - start) * 1e-9;
  }
  return s;
}

// Pinned host memory: a CL_MEM_ALLOC_HOST_PTR buffer mapped once for the whole run; its pointer is
// the host side of every transfer (page-locked, so the DMA engines run at full speed).
class Pinned {
 public:
  Pinned(const cl::Context& context, const cl::CommandQueue& queue, std::size_t count)
      : queue_(queue),
        buffer_(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, count * sizeof(float)),
        count_(count) {
    ptr_ = static_cast<float*>(
        queue_.enqueueMapBuffer(buffer_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, count * sizeof(float)));
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  ~Pinned() {
    try {
      queue_.enqueueUnmapMemObject(buffer_, ptr_);
      queue_.finish();
    } catch (...) {  // nothing sensible to do in a destructor
    }
  }
  float* data() const { return ptr_; }
  std::size_t size() const { return count_; }

 private:
  cl::CommandQueue queue_;
  cl::Buffer buffer_;
  std::size_t count_;
  float* ptr_ = nullptr;
};

// Context, queues and timing of one run. In sync mode the three queue names are one queue.
struct Setup {
  Setup(const cl::Device& dev, Mode m) : device(dev), context(dev), mode(m) {
    kernel = cl::CommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE);
    if (mode == Mode::async) {
      h2d = cl::CommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE);
      d2h = cl::CommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE);
    } else {
      h2d = kernel;
      d2h = kernel;
    }
  }
  bool async() const { return mode == Mode::async; }
  cl::Buffer device_buffer(std::size_t count) const {
    cl::Buffer b(context, CL_MEM_READ_WRITE, count * sizeof(float));
    kernel.enqueueFillBuffer(b, 0.0f, 0, count * sizeof(float));
    return b;
  }
  std::unique_ptr<Pinned> pinned(std::size_t count) const { return std::make_unique<Pinned>(context, kernel, count); }
  void finish_all() const {
    h2d.finish();
    kernel.finish();
    d2h.finish();
  }
  // One small transfer in each direction on the transfer queues, so first-use costs stay out of the
  // timed loop.
  void warm_transfers(const cl::Buffer& buf, float* host) const {
    h2d.enqueueWriteBuffer(buf, CL_TRUE, 0, sizeof(float), host);
    d2h.enqueueReadBuffer(buf, CL_TRUE, 0, sizeof(float), host);
  }
  void start() {
    finish_all();
    t0 = Clock::now();
  }
  void stop(Result& r) {
    finish_all();
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.h2d_seconds = device_seconds(h2d_events);
    r.d2h_seconds = device_seconds(d2h_events);
    r.kernel_seconds = device_seconds(kernel_events);
  }

  cl::Device device;
  cl::Context context;
  Mode mode;
  cl::CommandQueue h2d, kernel, d2h;
  Events h2d_events, kernel_events, d2h_events;
  Clock::time_point t0;
};

// Runs the workload's host work f (frame generation, sums, norms) and adds its time to r.host_seconds.
template <class F>
void host_work(Result& r, F&& f) {
  const auto t = Clock::now();
  f();
  r.host_seconds += std::chrono::duration<double>(Clock::now() - t).count();
}

const Events* wait_list(const Events& e) { return e.empty() ? nullptr : &e; }

// Enqueue helpers: record the event for the profile sums and return it.
cl::Event write(Setup& s, const cl::Buffer& dst, const float* src, std::size_t count, const Events& wait) {
  cl::Event e;
  s.h2d.enqueueWriteBuffer(dst, s.async() ? CL_FALSE : CL_TRUE, 0, count * sizeof(float), src, wait_list(wait), &e);
  if (s.async()) s.h2d.flush();  // the kernel queue waits on it
  s.h2d_events.push_back(e);
  return e;
}
cl::Event read(Setup& s, const cl::Buffer& src, float* dst, std::size_t count, const Events& wait) {
  cl::Event e;
  s.d2h.enqueueReadBuffer(src, s.async() ? CL_FALSE : CL_TRUE, 0, count * sizeof(float), dst, wait_list(wait), &e);
  if (s.async()) s.d2h.flush();  // the kernel queue (WAR) and the host wait on it
  s.d2h_events.push_back(e);
  return e;
}
cl::Event launch(Setup& s, const cl::Kernel& k, const cl::NDRange& global, const cl::NDRange& local,
                 const Events& wait) {
  cl::Event e;
  s.kernel.enqueueNDRangeKernel(k, cl::NullRange, global, local, wait_list(wait), &e);
  s.kernel_events.push_back(e);
  return e;
}

cl::NDRange stencil_global(int w, int h) {
  return {wl::round_up(static_cast<std::size_t>(w), wl::kStencilLocal),
          wl::round_up(static_cast<std::size_t>(h), wl::kStencilLocal)};
}
const cl::NDRange stencil_local{static_cast<std::size_t>(wl::kStencilLocal),
                                static_cast<std::size_t>(wl::kStencilLocal)};

// ---------------------------------------------------------------------------------------------------
Result sobel_impl(const cl::Device& device, const SobelParams& p, Mode mode) {
  Setup s(device, mode);
  const cl::Program program = build_program(s.context, device, locate_kernel_file("sobel.cl", p.kernels_dir));
  cl::Kernel k_rows(program, "sobel_rows"), k_cs(program, "sobel_col_smooth"), k_cd(program, "sobel_col_diff"),
      k_mag(program, "sobel_magnitude");

  const std::size_t count = static_cast<std::size_t>(p.width) * static_cast<std::size_t>(p.height);
  const int slots = !s.async() ? 1 : p.slots > 0 ? p.slots : wl::kDefaultSobelSlots;
  const auto arena = wl::host_arena(device, p.host_threads);
  std::vector<cl::Buffer> d_in, d_out;
  std::vector<std::unique_ptr<Pinned>> h_in, h_out;
  for (int i = 0; i < slots; ++i) {
    d_in.push_back(s.device_buffer(count));
    d_out.push_back(s.device_buffer(count));
    h_in.push_back(s.pinned(count));
    h_out.push_back(s.pinned(count));
  }
  const cl::Buffer row_diff = s.device_buffer(count), row_smooth = s.device_buffer(count), gx = s.device_buffer(count),
                   gy = s.device_buffer(count);

  k_rows.setArg(1, row_diff);
  k_rows.setArg(2, row_smooth);
  k_rows.setArg(3, p.width);
  k_rows.setArg(4, p.height);
  k_cs.setArg(0, row_diff);
  k_cs.setArg(1, gx);
  k_cs.setArg(2, p.width);
  k_cs.setArg(3, p.height);
  k_cd.setArg(0, row_smooth);
  k_cd.setArg(1, gy);
  k_cd.setArg(2, p.width);
  k_cd.setArg(3, p.height);
  k_mag.setArg(0, gx);
  k_mag.setArg(1, gy);
  k_mag.setArg(3, p.width);
  k_mag.setArg(4, p.height);
  auto use_slot = [&](int slot) {
    k_rows.setArg(0, d_in[slot]);
    k_mag.setArg(2, d_out[slot]);
  };
  const cl::NDRange global = stencil_global(p.width, p.height);

  // Warm-up (untimed): each slot's whole frame once (host buffers written, H2D, every kernel, D2H),
  // so no page of any buffer is first touched inside the timed loop. On a CPU device a first write
  // there is a page fault whose TLB shoot-down interrupts the kernels on the other cores.
  s.warm_transfers(d_in[0], h_in[0]->data());
  for (int i = 0; i < slots; ++i) {
    std::fill_n(h_in[i]->data(), count, 0.0f);
    std::fill_n(h_out[i]->data(), count, 0.0f);
    s.h2d.enqueueWriteBuffer(d_in[i], CL_TRUE, 0, count * sizeof(float), h_in[i]->data());
    use_slot(i);
    for (const cl::Kernel* k : {&k_rows, &k_cs, &k_cd, &k_mag})
      s.kernel.enqueueNDRangeKernel(*k, cl::NullRange, global, stencil_local);
    s.kernel.finish();
    s.d2h.enqueueReadBuffer(d_out[i], CL_TRUE, 0, count * sizeof(float), h_out[i]->data());
  }

  Result r;
  s.start();
  auto generate = [&](int slot, int frame) {
    host_work(r, [&] { arena->execute([&] { wl::generate_frame(h_in[slot]->data(), p.width, p.height, frame); }); });
  };
  auto consume = [&](int slot) {
    host_work(r, [&] { arena->execute([&] { r.checksum += wl::host_sum(h_out[slot]->data(), count); }); });
  };
  if (!s.async()) {
    for (int i = 0; i < p.frames; ++i) {
      generate(0, i);
      write(s, d_in[0], h_in[0]->data(), count, {});
      use_slot(0);
      launch(s, k_rows, global, stencil_local, {});
      launch(s, k_cs, global, stencil_local, {});
      launch(s, k_cd, global, stencil_local, {});
      launch(s, k_mag, global, stencil_local, {});
      read(s, d_out[0], h_out[0]->data(), count, {});  // blocking: the kernels are done too
      consume(0);
    }
  } else {
    const std::size_t frames = static_cast<std::size_t>(p.frames), n = static_cast<std::size_t>(slots);
    Events h2d(frames), rows(frames), mag(frames), d2h(frames);
    // Host write: the sums run in frame order on a thread of their own, each once its D2H is done,
    // beside the generation of later frames on this one (as hetflow's host tasks do).
    double consume_seconds = 0;
    OrderedConsumer consumer(frames, [&](std::size_t k) {
      d2h[k].wait();
      const auto t = Clock::now();
      arena->execute([&] { r.checksum += wl::host_sum(h_out[k % n]->data(), count); });
      consume_seconds += std::chrono::duration<double>(Clock::now() - t).count();
    });
    for (std::size_t i = 0; i < frames; ++i) {
      const int slot = static_cast<int>(i % n);
      // Host read: frame i into the pinned buffer that frame i-n's H2D was reading.
      if (i >= n) h2d[i - n].wait();
      generate(slot, static_cast<int>(i));
      // H2D into d_in[slot] once frame i-n's row pass has read it (WAR).
      h2d[i] = write(s, d_in[slot], h_in[slot]->data(), count, i >= n ? Events{rows[i - n]} : Events{});
      use_slot(slot);
      rows[i] = launch(s, k_rows, global, stencil_local, {h2d[i]});
      launch(s, k_cs, global, stencil_local, {});
      launch(s, k_cd, global, stencil_local, {});
      // The magnitude overwrites d_out[slot] once frame i-n's D2H has read it (WAR).
      mag[i] = launch(s, k_mag, global, stencil_local, i >= n ? Events{d2h[i - n]} : Events{});
      s.kernel.flush();  // the H2D and D2H queues wait on these kernels
      // The D2H overwrites h_out[slot] once the host has summed frame i-n (WAR).
      if (i >= n) consumer.wait_consumed(i - n);
      d2h[i] = read(s, d_out[slot], h_out[slot]->data(), count, {mag[i]});
      consumer.ready(i);
    }
    consumer.finish();
    r.host_seconds += consume_seconds;
  }
  s.stop(r);
  const float* last = h_out[static_cast<std::size_t>(p.frames - 1) % h_out.size()]->data();
  r.output.assign(last, last + count);
  return r;
}

// ---------------------------------------------------------------------------------------------------
Result jacobi_impl(const cl::Device& device, const JacobiParams& p, Mode mode) {
  Setup s(device, mode);
  const cl::Program program = build_program(s.context, device, locate_kernel_file("jacobi.cl", p.kernels_dir));
  cl::Kernel k_step(program, "jacobi_step");

  const std::size_t count = static_cast<std::size_t>(p.n) * static_cast<std::size_t>(p.n);
  const cl::Buffer grid[2] = {s.device_buffer(count), s.device_buffer(count)};
  const auto h_init = s.pinned(count);
  std::vector<std::unique_ptr<Pinned>> h_snap;
  for (int i = 0; i < (s.async() ? 2 : 1); ++i) h_snap.push_back(s.pinned(count));
  const cl::NDRange global = stencil_global(p.n, p.n);
  k_step.setArg(2, p.n);

  // Warm-up (untimed) on the zero-filled grids.
  k_step.setArg(0, grid[0]);
  k_step.setArg(1, grid[1]);
  s.kernel.enqueueNDRangeKernel(k_step, cl::NullRange, global, stencil_local);
  s.warm_transfers(grid[0], h_snap[0]->data());
  {
    std::vector<float> init;
    wl::jacobi_initial_grid(init, p.n);
    std::copy(init.begin(), init.end(), h_init->data());
  }

  Result r;
  s.start();
  const cl::Event up = write(s, grid[0], h_init->data(), count, {});
  int cur = 0;                          // the grid holding the current iterate
  std::optional<cl::Event> reading[2];  // async: the pending D2H reading each grid
  cl::Event last_step;
  std::optional<cl::Event> prev_snap;  // async: the last snapshot's D2H, not yet consumed
  std::size_t prev_slot = 0, snaps = 0;
  const float* final_grid = nullptr;

  for (int it = 0; it < p.iterations; ++it) {
    const int dst = 1 - cur;
    Events wait;
    if (it == 0 && s.async()) wait.push_back(up);
    if (reading[dst]) wait.push_back(*reading[dst]);  // WAR: the snapshot of dst must be on the host
    k_step.setArg(0, grid[cur]);
    k_step.setArg(1, grid[dst]);
    last_step = launch(s, k_step, global, stencil_local, wait);
    cur = dst;
    if ((it + 1) % p.copy_every != 0) continue;

    // Snapshot of the current grid to the host, which sums it.
    const std::size_t slot = snaps % h_snap.size();
    if (!s.async()) {
      read(s, grid[cur], h_snap[slot]->data(), count, {});  // blocking
      host_work(r, [&] { r.checksum += wl::host_sum(h_snap[slot]->data(), count); });
    } else {
      s.kernel.flush();  // the D2H queue waits on the step
      reading[cur] = read(s, grid[cur], h_snap[slot]->data(), count, {last_step});
      // Consume the previous snapshot while the device works on.
      if (prev_snap) {
        prev_snap->wait();
        host_work(r, [&] { r.checksum += wl::host_sum(h_snap[prev_slot]->data(), count); });
      }
      prev_snap = reading[cur];
    }
    prev_slot = slot;
    ++snaps;
    if (it + 1 == p.iterations) final_grid = h_snap[slot]->data();
  }
  if (prev_snap) {
    prev_snap->wait();
    host_work(r, [&] { r.checksum += wl::host_sum(h_snap[prev_slot]->data(), count); });
  }
  if (!final_grid) {  // the last iterate was not a snapshot: fetch it
    if (s.async()) s.kernel.flush();
    const std::size_t slot = (prev_slot + 1) % h_snap.size();  // not the buffer of a pending snapshot
    const cl::Event e =
        read(s, grid[cur], h_snap[slot]->data(), count, p.iterations > 0 ? Events{last_step} : Events{up});
    if (s.async()) e.wait();
    final_grid = h_snap[slot]->data();
  }
  s.stop(r);
  r.output.assign(final_grid, final_grid + count);
  return r;
}

// ---------------------------------------------------------------------------------------------------
Result matpow_impl(const cl::Device& device, const MatpowParams& p, Mode mode) {
  Setup s(device, mode);
  const cl::Program program = build_program(s.context, device, locate_kernel_file("matmul.cl", p.kernels_dir));
  cl::Kernel k_mm(program, "matmul_tiled");
  const MatmulGeometry geo = matmul_geometry(k_mm, device, p.n);

  const std::size_t count = static_cast<std::size_t>(p.n) * static_cast<std::size_t>(p.n);
  const cl::Buffer d_a = s.device_buffer(count);
  const cl::Buffer d_p[2] = {s.device_buffer(count), s.device_buffer(count)};
  const auto h_a = s.pinned(count);
  std::vector<std::unique_ptr<Pinned>> h_p;
  for (int i = 0; i < (s.async() ? 2 : 1); ++i) h_p.push_back(s.pinned(count));
  k_mm.setArg(3, p.n);

  // Warm-up (untimed) on the zero-filled buffers.
  k_mm.setArg(0, d_a);
  k_mm.setArg(1, d_a);
  k_mm.setArg(2, d_p[0]);
  s.kernel.enqueueNDRangeKernel(k_mm, cl::NullRange, geo.global, geo.local);
  s.warm_transfers(d_a, h_p[0]->data());
  {
    std::vector<float> a;
    wl::matpow_input(a, p.n);
    std::copy(a.begin(), a.end(), h_a->data());
  }

  Result r;
  s.start();
  const cl::Event up = write(s, d_a, h_a->data(), count, {});
  std::optional<cl::Event> reading[2];  // async: the pending D2H reading each product buffer
  std::optional<cl::Event> prev;        // async: the previous product's D2H, not yet consumed
  std::size_t prev_slot = 0, last_slot = 0;
  k_mm.setArg(1, d_a);
  for (int k = 1; k <= p.products; ++k) {
    const std::size_t out = static_cast<std::size_t>(k - 1) % 2;  // P_k lives in d_p[out]
    Events wait;
    if (k == 1 && s.async()) wait.push_back(up);
    if (reading[out]) wait.push_back(*reading[out]);  // WAR: P_{k-2} must be on the host
    k_mm.setArg(0, k == 1 ? d_a : d_p[1 - out]);
    k_mm.setArg(2, d_p[out]);
    const cl::Event e = launch(s, k_mm, geo.global, geo.local, wait);
    const std::size_t slot = static_cast<std::size_t>(k - 1) % h_p.size();
    if (!s.async()) {
      read(s, d_p[out], h_p[slot]->data(), count, {});  // blocking
      host_work(r, [&] { r.checksum += wl::frobenius_norm(h_p[slot]->data(), count); });
    } else {
      s.kernel.flush();  // the D2H queue waits on the product
      reading[out] = read(s, d_p[out], h_p[slot]->data(), count, {e});
      if (prev) {  // the host norm of P_{k-1} overlaps the product P_{k+1}
        prev->wait();
        host_work(r, [&] { r.checksum += wl::frobenius_norm(h_p[prev_slot]->data(), count); });
      }
      prev = reading[out];
      prev_slot = slot;
    }
    last_slot = slot;
  }
  if (prev) {
    prev->wait();
    host_work(r, [&] { r.checksum += wl::frobenius_norm(h_p[prev_slot]->data(), count); });
  }
  s.stop(r);
  r.output.assign(h_p[last_slot]->data(), h_p[last_slot]->data() + count);
  return r;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw UsageError(what);
}

}  // namespace

// ---- public ----------------------------------------------------------------------------------------

const char* to_string(Mode mode) { return mode == Mode::sync ? "sync" : "async"; }

std::string kernel_dir(const std::string& fallback) {
  auto dirs = env_kernel_dirs();
  return dirs.empty() ? fallback : dirs.front();
}

std::string locate_kernel_file(const std::string& file, const std::string& kernels_dir) {
  auto dirs = env_kernel_dirs();
  dirs.push_back(kernels_dir);
  std::string tried;
  std::error_code ec;
  for (const auto& dir : dirs) {
    const fs::path candidate = fs::path(dir) / file;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    tried += "\n  " + candidate.string();
  }
  throw FileNotFoundError("kernel file '" + file + "' not found; searched:" + tried +
                          "\n(set HETFLOW_KERNEL_PATH to the directory holding it)");
}

cl::Program build_program(const cl::Context& context, const cl::Device& device, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileNotFoundError("cannot read kernel file '" + path + "'");
  std::stringstream source;
  source << in.rdbuf();
  return checked([&] {
    cl::Program program(context, source.str());
    try {
      program.build({device}, kBuildOptions);
    } catch (const cl::Error& e) {
      if (e.err() != CL_BUILD_PROGRAM_FAILURE) throw;
      throw BuildError(device.getInfo<CL_DEVICE_NAME>(), path, program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device));
    }
    return program;
  });
}

MatmulGeometry matmul_geometry(const cl::Kernel& kernel, const cl::Device& device, int n) {
  const auto reqd = checked([&] { return kernel.getWorkGroupInfo<CL_KERNEL_COMPILE_WORK_GROUP_SIZE>(device); });
  MatmulGeometry g;
  std::size_t lx = reqd[0], ly = reqd[1];
  if (lx == 0 || ly == 0) {  // no reqd_work_group_size: the documented defaults
    lx = static_cast<std::size_t>(wl::kMatmulTile);
    ly = static_cast<std::size_t>(wl::kMatmulTile / wl::kMatmulWpt);
  }
  g.tile = lx;
  g.wpt = lx / ly;
  require(n > 0 && static_cast<std::size_t>(n) % g.tile == 0,
          "matmul_tiled needs n to be a positive multiple of TILE = " + std::to_string(g.tile) +
              ", got n = " + std::to_string(n));
  const std::size_t nn = static_cast<std::size_t>(n);
  g.global = cl::NDRange(nn, nn / g.wpt);
  g.local = cl::NDRange(lx, ly);
  return g;
}

Result run_sobel(const cl::Device& device, const SobelParams& p, Mode mode) {
  require(p.width > 0 && p.height > 0 && p.frames > 0, "run_sobel: width, height and frames must be positive (got " +
                                                           std::to_string(p.width) + "x" + std::to_string(p.height) +
                                                           ", " + std::to_string(p.frames) + " frames)");
  require(p.slots >= 0 && p.host_threads >= 0, "run_sobel: slots and host_threads must be positive or 0 (got " +
                                                   std::to_string(p.slots) + ", " + std::to_string(p.host_threads) +
                                                   ")");
  return checked([&] { return sobel_impl(device, p, mode); });
}

Result run_jacobi(const cl::Device& device, const JacobiParams& p, Mode mode) {
  require(p.n > 0 && p.iterations >= 0 && p.copy_every > 0,
          "run_jacobi: n and copy_every must be positive and iterations non-negative (got n = " + std::to_string(p.n) +
              ", iterations = " + std::to_string(p.iterations) + ", copy_every = " + std::to_string(p.copy_every) +
              ")");
  return checked([&] { return jacobi_impl(device, p, mode); });
}

Result run_matpow(const cl::Device& device, const MatpowParams& p, Mode mode) {
  require(p.n > 0 && p.products > 0, "run_matpow: n and products must be positive (got n = " + std::to_string(p.n) +
                                         ", products = " + std::to_string(p.products) + ")");
  return checked([&] { return matpow_impl(device, p, mode); });
}

}  // namespace hetflow::native
