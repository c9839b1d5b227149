// Device throughput against chunk size for the heterogeneous loop workloads (tools/workloads/
// *_loop.hpp), and one CPU core's throughput: the curve LogFit explores, and the check that a
// size is large enough for the device (research next-features A6: its sizes are guesses).
//   bench_loop_sweep mandelbrot|nbody|spmv|barnes-hut SIZE [options]
//     SIZE: mandelbrot: image side (rows = iterations); nbody, barnes-hut: bodies; spmv: log2 rows
//     --max-iter=N      mandelbrot's iteration limit (2048)
//     --fast            nbody, barnes-hut: the fast-math kernel (rsqrt, contraction)
//     --lanes=N         nbody: work-items per body (16)
//     --max-chunks=N    launches per chunk size; beyond n/chunk they sample the range evenly (256)
//     --reps=N          passes per chunk size; the table shows the median (3)
//     --cpu-seconds=S   time budget of the one-core measurement (3)
//     --cpu-chunk=N     iterations per CPU block (64)
//     --check           after the sweep, one device pass over [0, n) against the sequential reference
//     (the reference is one core's pass over the whole loop: minutes at the H200 sizes)
// Device time is OpenCL profiling (kernel start to end, in-order queue so launches never overlap);
// "wall" is host clock from the first launch to the wait, which adds launch gaps; max/min is the
// slowest launch's time over the fastest's among the chunks of one size (1 for a regular loop).
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "workloads/loop_workloads.hpp"
#include "bench_timing.hpp"

using namespace hetflow;
namespace wl = hetflow::workloads;

namespace {

struct Options {
  std::string workload;
  std::size_t size = 0;
  int max_iter = 2048;
  bool fast = false, check = false;
  std::size_t max_chunks = 256, reps = 3, cpu_chunk = 64, lanes = 16;
  double cpu_seconds = 3;
};

// The calls the sweep makes, whatever the workload.
struct Loop {
  std::size_t n = 0;
  std::string kernel, what;
  std::function<void(Controller&, std::size_t, std::size_t)> device;
  std::function<void(std::size_t, std::size_t)> cpu;
  std::function<void(Controller&)> upload;
  std::function<std::string(Controller&)> check;  // full device pass + fetch, against the reference
};

template <class W>
Loop wrap(std::shared_ptr<W> w, std::string kernel, std::string what) {
  Loop l;
  l.n = w->size();
  l.kernel = std::move(kernel);
  l.what = std::move(what);
  l.device = [w](Controller& c, std::size_t b, std::size_t e) { w->device(c, b, e); };
  l.cpu = [w](std::size_t b, std::size_t e) { w->cpu(b, e); };
  l.upload = [w](Controller& c) { w->upload(c); };
  l.check = [w](Controller& c) {
    const auto ref = w->reference();
    w->clear_output();
    w->device(c, 0, w->size());
    w->fetch(c, 0, w->size());
    c.wait_all();
    return w->check(ref).str();
  };
  return l;
}

Loop make_loop(Controller& c, const Options& o) {
  if (o.workload == "mandelbrot") {
    auto w = std::make_shared<wl::MandelbrotLoop>(c, wl::MandelbrotLoop::Params{o.size, o.size, o.max_iter});
    return wrap(w, "mandelbrot_rows",
                std::to_string(o.size) + "x" + std::to_string(o.size) + " max_iter " + std::to_string(o.max_iter));
  }
  if (o.workload == "nbody") {
    auto w =
        std::make_shared<wl::NBodyLoop>(c, wl::NBodyLoop::Params{.n = o.size, .fast_math = o.fast, .lanes = o.lanes});
    return wrap(w, "nbody_accel",
                std::to_string(o.size) + " bodies, " + std::to_string(o.lanes) + " lanes" +
                    (o.fast ? ", fast math" : ", exact"));
  }
  if (o.workload == "spmv") {
    const auto t0 = std::chrono::steady_clock::now();
    auto w = std::make_shared<wl::SpmvLoop>(c, wl::SpmvLoop::Params{.scale = unsigned(o.size)});
    const double gen = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char buf[160];
    std::snprintf(buf, sizeof buf, "2^%zu rows, %zu nonzeros (%.1f per row), generated in %.2f s", o.size,
                  w->nonzeros(), double(w->nonzeros()) / double(w->size()), gen);
    return wrap(w, "spmv_csr", buf);
  }
  if (o.workload == "barnes-hut") {
    auto w = std::make_shared<wl::BarnesHutLoop>(c, wl::BarnesHutLoop::Params{.n = o.size, .fast_math = o.fast});
    const double build = bench::seconds_of([&] { w->before_step(); });
    char buf[200];
    std::snprintf(buf, sizeof buf, "%zu bodies, %zu tree nodes, host tree build %.3f s%s", o.size, w->tree_nodes(),
                  build, o.fast ? ", fast math" : ", exact");
    return wrap(w, "bh_force", buf);
  }
  throw UsageError("unknown workload '" + o.workload + "': mandelbrot, nbody, spmv or barnes-hut");
}

// Chunks of `chunk` iterations: the whole range when it takes at most `max_chunks`, else
// `max_chunks` of them spread evenly over it (irregular loops cost differently in different places).
std::vector<std::pair<std::size_t, std::size_t>> chunks_of(std::size_t n, std::size_t chunk, std::size_t max_chunks) {
  std::vector<std::pair<std::size_t, std::size_t>> v;
  const std::size_t count = (n + chunk - 1) / chunk;
  if (count <= max_chunks) {
    for (std::size_t b = 0; b < n; b += chunk) v.emplace_back(b, std::min(n, b + chunk));
    return v;
  }
  for (std::size_t k = 0; k < max_chunks; ++k) {
    const std::size_t b = std::size_t(double(k) * double(n - chunk) / double(max_chunks - 1));
    v.emplace_back(b, b + chunk);
  }
  return v;
}

struct Sample {
  double device_s = 0, wall_s = 0;
  double slowest_s = 0, fastest_s = 1e30;  // per launch: how unevenly the loop's cost is spread
  std::size_t iterations = 0, launches = 0;
};

Sample device_pass(Controller& c, const Loop& l, std::size_t chunk, std::size_t max_chunks) {
  const auto chunks = chunks_of(l.n, chunk, max_chunks);
  const std::size_t before = c.records().size();
  Sample s;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [b, e] : chunks) {
    l.device(c, b, e);
    s.iterations += e - b;
  }
  c.wait_all();
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto recs = c.records();
  for (std::size_t i = before; i < recs.size(); ++i)
    if (recs[i].kind == "kernel" && recs[i].name == l.kernel) {
      if (recs[i].start_ns < 0 || recs[i].end_ns < recs[i].start_ns)
        throw Error("kernel record " + std::to_string(recs[i].id) + " has no profiling times");
      const double t = double(recs[i].end_ns - recs[i].start_ns) * 1e-9;
      s.device_s += t;
      ++s.launches;
      // The range's last chunk may be short: only full chunks compare.
      if (s.launches < chunks.size() || chunks.back().second - chunks.back().first == chunk) {
        s.slowest_s = std::max(s.slowest_s, t);
        s.fastest_s = std::min(s.fastest_s, t);
      }
    }
  if (s.launches != chunks.size())
    throw Error("expected " + std::to_string(chunks.size()) + " kernel records, found " + std::to_string(s.launches));
  return s;
}

// One core: blocks of `chunk` iterations at low-discrepancy positions (golden-ratio steps) until
// the budget is spent, so an irregular loop is sampled everywhere even when the budget is short.
double cpu_throughput(const Loop& l, std::size_t chunk, double budget, std::size_t& iterations) {
  chunk = std::min(chunk, l.n);
  iterations = 0;
  double spent = 0, u = 0.5;
  do {
    const std::size_t b = std::min(std::size_t(u * double(l.n - chunk + 1)), l.n - chunk);
    spent += bench::seconds_of([&] { l.cpu(b, b + chunk); });
    iterations += chunk;
    u = std::fmod(u + 0.6180339887498949, 1.0);
  } while (spent < budget && iterations + chunk <= l.n);
  return double(iterations) / spent;
}

Options parse(int argc, char** argv) {
  if (argc < 3) throw UsageError("usage: bench_loop_sweep mandelbrot|nbody|spmv|barnes-hut SIZE [--options]");
  Options o;
  o.workload = argv[1];
  o.size = std::stoul(argv[2]);
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    const std::string key = a.substr(0, eq), val = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--fast")
      o.fast = true;
    else if (key == "--check")
      o.check = true;
    else if (key == "--max-iter")
      o.max_iter = std::stoi(val);
    else if (key == "--lanes")
      o.lanes = std::stoul(val);
    else if (key == "--max-chunks")
      o.max_chunks = std::max<std::size_t>(2, std::stoul(val));
    else if (key == "--reps")
      o.reps = std::max<std::size_t>(1, std::stoul(val));
    else if (key == "--cpu-seconds")
      o.cpu_seconds = std::stod(val);
    else if (key == "--cpu-chunk")
      o.cpu_chunk = std::max<std::size_t>(1, std::stoul(val));
    else
      throw UsageError("unknown option '" + a + "'");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    ControllerOptions co;
    co.profiling = true;
    co.record = true;
    co.queue_order = QueueOrder::in_order;  // launches must not overlap for their times to add up
    Controller c(co);
    Loop l = make_loop(c, o);
    std::printf("%s: %s on %s\n", o.workload.c_str(), l.what.c_str(), c.device().name.c_str());
    l.upload(c);
    l.device(c, 0, std::min<std::size_t>(l.n, 64));  // warm-up: first-launch costs stay out of the table
    c.wait_all();

    std::printf("%10s %8s %12s %8s %14s %14s\n", "chunk", "launches", "kernel_us", "max/min", "device_it/s",
                "wall_it/s");
    struct Row {
      std::size_t chunk;
      double device, wall;
    };
    std::vector<Row> rows;
    for (std::size_t chunk = 64;; chunk *= 2) {
      chunk = std::min(chunk, l.n);
      std::vector<double> dev, wall, per_launch, spread;
      std::size_t launches = 0;
      for (std::size_t r = 0; r < o.reps; ++r) {
        const Sample s = device_pass(c, l, chunk, o.max_chunks);
        dev.push_back(double(s.iterations) / s.device_s);
        wall.push_back(double(s.iterations) / s.wall_s);
        per_launch.push_back(s.device_s / double(s.launches) * 1e6);
        spread.push_back(s.slowest_s / s.fastest_s);
        launches = s.launches;
      }
      rows.push_back({chunk, bench::median(dev), bench::median(wall)});
      std::printf("%10zu %8zu %12.1f %8.2f %14.4g %14.4g\n", chunk, launches, bench::median(per_launch),
                  bench::median(spread), rows.back().device, rows.back().wall);
      std::fflush(stdout);
      if (chunk == l.n) break;
    }
    std::size_t cpu_iters = 0;
    const double cpu = cpu_throughput(l, o.cpu_chunk, o.cpu_seconds, cpu_iters);
    double best = 0;
    for (const auto& r : rows) best = std::max(best, r.device);
    std::size_t knee = rows.back().chunk;
    for (const auto& r : rows)
      if (r.device >= 0.9 * best) {
        knee = r.chunk;
        break;
      }
    std::printf("one CPU core: %.4g it/s (%zu iterations in blocks of %zu)\n", cpu, cpu_iters,
                std::min(o.cpu_chunk, l.n));
    std::printf("device peak %.4g it/s; 90%% of it from chunk %zu (n / chunk = %.0f); device / one core = %.1f\n", best,
                knee, double(l.n) / double(knee), best / cpu);
    if (o.check) std::printf("check, one device pass: %s\n", l.check(c).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loop_sweep: %s\n", e.what());
    return 1;
  }
}
