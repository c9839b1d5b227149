// What a chunk of hetflow::parallel_for costs beyond its work (issue 15: "the overhead per chunk —
// scheduler decision + launch — against a plain tbb::parallel_for of the CPU body"). The body is
// next to nothing (y[i] = 2 x[i] + 1), so a call's time is its chunks' costs:
// - CPU: tbb::parallel_for with a simple_partitioner and grain CHUNK, in an arena of as many threads
//   as the loop runs CPU workers, against the loop with only a CPU body under dynamic:CHUNK (the same
//   chunks) and under logfit (its own chunks);
// - device: the hand-written equivalent of one device slot — per chunk a kernel over the chunk with a
//   global offset, a read of its region back, a wait on that read — against the loop with only a
//   device body under dynamic:CHUNK and logfit; each twice, side by side: on queues that profile
//   (as LogFit's chunk times want) and on queues that do not (NVIDIA charges ~6 us a command for a
//   profiled event, tools/drivers/chunk_chain_probe.c; the loop then times chunks by the host clock).
// "added us/chunk" = (call − the plain version's call) / the loop's chunks, where both cut the same
// chunks (dynamic); LogFit's rows show its own chunks and their mean cost. Medians of CALLS calls
// of one loop each (its scheduler's state kept, as time steps), after one warm-up call.
//   bench_chunk_overhead [N=1048576] [CHUNK=4096] [CALLS=9]
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <hetflow/hetflow.hpp>
#include <hetflow/opencl.hpp>
#include <hetflow/parallel_for.hpp>
#include <string>
#include <vector>

using namespace hetflow;

namespace {

constexpr const char* kSource =
    "kernel void affine(global const float* x, global float* y, ulong end) {"
    "  size_t i = get_global_id(0); if (i < end) y[i] = 2.0f * x[i] + 1.0f; }";

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The device chunks by hand: one in-order queue, pinned host images, a chunk's read waited for
// before the next chunk is enqueued (as one device slot does).
class RawChunks {
 public:
  RawChunks(const DeviceInfo& device, std::size_t n, bool profiling) : context_(device.device), n_(n) {
    queue_ = cl::CommandQueue(context_, device.device, profiling ? CL_QUEUE_PROFILING_ENABLE : 0);
    program_ = cl::Program(context_, kSource);
    program_.build();
    kernel_ = cl::Kernel(program_, "affine");
    x_ = cl::Buffer(context_, CL_MEM_READ_ONLY, n * sizeof(float));
    y_ = cl::Buffer(context_, CL_MEM_READ_WRITE, n * sizeof(float));
    pinned_ = cl::Buffer(context_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n * sizeof(float));
    host_ = static_cast<float*>(
        queue_.enqueueMapBuffer(pinned_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n * sizeof(float)));
    std::fill_n(host_, n, 1.0f);
    queue_.enqueueWriteBuffer(x_, CL_TRUE, 0, n * sizeof(float), host_);
    queue_.enqueueWriteBuffer(y_, CL_TRUE, 0, n * sizeof(float), host_);
    kernel_.setArg(0, x_);
    kernel_.setArg(1, y_);
  }
  ~RawChunks() { queue_.enqueueUnmapMemObject(pinned_, host_), queue_.finish(); }
  std::size_t call(std::size_t chunk) {
    std::size_t chunks = 0;
    for (std::size_t b = 0; b < n_; b += chunk, ++chunks) {
      const std::size_t e = std::min(n_, b + chunk);
      kernel_.setArg(2, cl_ulong(e));
      queue_.enqueueNDRangeKernel(kernel_, cl::NDRange(b), cl::NDRange(e - b));
      cl::Event read;
      queue_.enqueueReadBuffer(y_, CL_FALSE, b * sizeof(float), (e - b) * sizeof(float), host_ + b, nullptr, &read);
      read.wait();
    }
    return chunks;
  }

 private:
  cl::Context context_;
  cl::CommandQueue queue_;
  cl::Program program_;
  cl::Kernel kernel_;
  cl::Buffer x_, y_, pinned_;
  float* host_ = nullptr;
  std::size_t n_;
};

struct Row {
  std::string side, variant;
  double seconds = 0;
  std::size_t chunks = 0;
  double baseline = -1;  // the plain version's call, for "added"
};

void print(const Row& r) {
  std::printf("%-7s %-40s %10.5f %8zu %10.2f", r.side.c_str(), r.variant.c_str(), r.seconds, r.chunks,
              r.chunks ? r.seconds / double(r.chunks) * 1e6 : 0.0);
  if (r.baseline >= 0 && r.chunks) std::printf(" %14.2f", (r.seconds - r.baseline) / double(r.chunks) * 1e6);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::stoull(argv[1]) : std::size_t(1) << 20;
  const std::size_t chunk = argc > 2 ? std::stoull(argv[2]) : 4096;
  const int calls = argc > 3 ? std::atoi(argv[3]) : 9;
  if (n == 0 || chunk == 0 || calls < 1) {
    std::fprintf(stderr, "usage: bench_chunk_overhead [N >= 1] [CHUNK >= 1] [CALLS >= 1]\n");
    return 2;
  }
  try {
    // One controller per side of the profiling question; the CPU rows run on the profiling one.
    struct Side {
      bool profiling;
      Controller c;
      Tile<float> x, y;
      Kernel affine;
      Side(bool profile, std::size_t n)
          : profiling(profile),
            c([&] {
              ControllerOptions o;
              o.profiling = profile;
              return o;
            }()),
            x(c.tile<float>(n, "x")),
            y(c.tile<float>(n, "y")),
            affine(c.kernel_from_source(kSource, "affine")) {
        std::fill_n(x.data(), n, 1.0f);
      }
    };
    Side profiled(true, n), plain_side(false, n);
    Controller& c = profiled.c;
    auto& x = profiled.x;
    auto& y = profiled.y;
    auto cpu_body = [&](Chunk ch) {
      for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 2.0f * x[i] + 1.0f;
    };

    // The loop's median call; its chunks, and how many CPU workers it ran.
    auto loop_row = [&](Side& on, const std::string& side, const std::string& scheduler, bool cpu, unsigned* workers) {
      LoopBody body;
      if (cpu) {
        body.cpu = cpu_body;
      } else {
        body.device = [&on](Controller& ctl, Chunk ch) {
          ctl.launch(on.affine, Range(ch.size()).offset(ch.begin), in(on.x), out(on.y.region(span_of(ch))),
                     cl_ulong(ch.end));
        };
        body.constants = {in(on.x)};  // moved once, as the hand-written version does
      }
      body.writes = [&on](Chunk ch) { return std::vector<Access>{out(on.y.region(span_of(ch)))}; };
      HeteroLoop loop(on.c, body, LoopOptions{.scheduler = scheduler});
      loop(n);  // warm-up: program builds, first allocations, the scheduler's first call
      std::vector<double> times;
      std::vector<std::size_t> chunks;
      for (int k = 0; k < calls; ++k) {
        const LoopReport r = loop(n);
        times.push_back(r.seconds);
        chunks.push_back(r.sides[0].chunks + r.sides[1].chunks);
        if (workers) *workers = r.cpu_workers;
      }
      std::sort(chunks.begin(), chunks.end());
      const std::string suffix = cpu || on.profiling ? "" : ", no profiling";
      return Row{side, "hetflow " + scheduler + suffix, median(times), chunks[chunks.size() / 2]};
    };

    std::printf("bench_chunk_overhead on %s; %zu iterations, chunks of %zu, median of %d calls\n",
                c.device().name.c_str(), n, chunk, calls);
    std::printf("%-7s %-40s %10s %8s %10s %14s\n", "side", "variant", "call s", "chunks", "us/chunk", "added us/chunk");
    const std::string dynamic = "dynamic:" + std::to_string(chunk);

    unsigned workers = 1;
    Row cpu_dynamic = loop_row(profiled, "cpu", dynamic, true, &workers);
    Row cpu_logfit = loop_row(profiled, "cpu", "logfit", true, nullptr);
    tbb::task_arena arena(int(std::max(1u, workers)));
    std::vector<double> plain;
    for (int k = 0; k < calls + 1; ++k)
      plain.push_back(seconds_of([&] {
        arena.execute([&] {
          tbb::parallel_for(
              tbb::blocked_range<std::size_t>(0, n, chunk),
              [&](const tbb::blocked_range<std::size_t>& r) {
                cpu_body(Chunk{r.begin(), r.end()});
              },
              tbb::simple_partitioner());
        });
      }));
    plain.erase(plain.begin());  // warm-up
    const Row cpu_plain{"cpu", "tbb::parallel_for, " + std::to_string(workers) + " threads", median(plain),
                        (n + chunk - 1) / chunk};
    cpu_dynamic.baseline = cpu_plain.seconds;
    for (const Row& r : {cpu_plain, cpu_dynamic, cpu_logfit}) print(r);

    // The device rows, profiled then not; each loop against the hand-written loop on the same kind of queue.
    for (Side* on : {&profiled, &plain_side}) {
      const bool profiling = on->profiling;
      Row dev_dynamic = loop_row(*on, "device", dynamic, false, nullptr);
      Row dev_logfit = loop_row(*on, "device", "logfit", false, nullptr);
      RawChunks raw(on->c.device(), n, profiling);
      std::vector<double> by_hand;
      std::size_t raw_chunks = 0;
      for (int k = 0; k < calls + 1; ++k) by_hand.push_back(seconds_of([&] { raw_chunks = raw.call(chunk); }));
      by_hand.erase(by_hand.begin());
      const Row dev_raw{"device", profiling ? "OpenCL by hand: kernel, read, wait" : "by hand, no profiling",
                        median(by_hand), raw_chunks};
      dev_dynamic.baseline = dev_raw.seconds;
      for (const Row& r : {dev_raw, dev_dynamic, dev_logfit}) print(r);
    }
    c.wait_all();
    plain_side.c.wait_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_chunk_overhead: %s\n", e.what());
    return 1;
  }
}
