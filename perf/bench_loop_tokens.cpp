// Does the device token starve when the CPU tokens keep every thread busy? Seed 002's flaw (its
// Fig. 47: with as many CPU tokens as cores, TBB 2020's opencl_node left the GPU idle) measured on
// hetflow::parallel_for: a loop whose CPU chunks each spin for CPU_MS and whose device chunks are a
// trivial kernel, under dynamic:CHUNK, with cpu_workers = cores - 1 (the default), cores and twice
// the cores asked (the loop runs at most the threads less one: the "ran" column). A healthy loop
// gives the device nearly every chunk (its chunks take microseconds) and ends in about one CPU
// chunk's time; a starved device token gets a chunk only when the CPU runs out.
//   bench_loop_tokens [CPU_MS=20] [N=65536] [CHUNK=1024] [CALLS=3]
#include <hetflow/hetflow.hpp>
#include <hetflow/parallel_for.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace hetflow;

int main(int argc, char** argv) {
  const double cpu_ms = argc > 1 ? std::atof(argv[1]) : 20;
  const std::size_t n = argc > 2 ? std::stoull(argv[2]) : 65536;
  const std::size_t chunk = argc > 3 ? std::stoull(argv[3]) : 1024;
  const int calls = argc > 4 ? std::atoi(argv[4]) : 3;
  try {
    ControllerOptions o;
    o.profiling = true;
    Controller c(o);
    auto y = c.tile<float>(n, "y");
    auto k = c.kernel_from_source(
        "kernel void mark(global float* y, ulong end) { size_t i = get_global_id(0); if (i < end) y[i] = 1; }", "mark");
    LoopBody body;
    body.cpu = [&](Chunk ch) {
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < cpu_ms) {
      }
      for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 1;
    };
    body.device = [&](Controller& ctl, Chunk ch) {
      ctl.launch(k, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
    };
    body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::printf("device: %s; %u cores; CPU chunk %.1f ms, %zu iterations in chunks of %zu, %d calls (median)\n",
                c.device().name.c_str(), cores, cpu_ms, n, chunk, calls);
    std::printf("%-22s %5s %10s %14s %14s\n", "cpu_workers", "ran", "call s", "device chunks", "device share");
    for (unsigned workers : {cores > 1 ? cores - 1 : 1u, cores, 2 * cores}) {
      HeteroLoop loop(c, body, LoopOptions{.scheduler = "dynamic:" + std::to_string(chunk), .cpu_workers = workers});
      std::vector<LoopReport> reports;
      for (int call = 0; call < calls; ++call) reports.push_back(loop(n));
      std::sort(reports.begin(), reports.end(), [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
      const LoopReport& r = reports[reports.size() / 2];
      const std::string label = std::to_string(workers) + (workers == cores - 1 ? " (cores - 1)"
                                                           : workers == cores   ? " (cores)"
                                                                                : " (2 x cores)");
      std::printf("%-22s %5u %10.4f %14zu %13.1f%%\n", label.c_str(), r.cpu_workers, r.seconds, r.sides[1].chunks,
                  100.0 * double(r.sides[1].iterations) / double(n));
    }
    c.wait_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loop_tokens: %s\n", e.what());
    return 1;
  }
}
