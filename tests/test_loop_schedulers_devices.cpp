// The loop schedulers over several devices of unequal speed, on a simulated clock
// (tests/loop_simulation.hpp): a fast device, a second one ten times slower, and the CPU, shaped
// like the H200 host (perf/RESULTS.md, "One loop over several devices", where the second device was
// PoCL: LogFit gave it nothing and ran 24 % slower than the H200 alone, HGuided's chunks on it held
// the call 12-15x). What a user who adds a slower device expects: the loop is never slower than
// without it, every iteration still runs once, the slow device never holds the end of a call, and
// an adaptive scheduler puts it to use where it helps. The schedulers are made from their text
// (LoopOptions::scheduler), as LoopState makes them.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "loop_scheduler_spec.hpp"
#include "loop_schedulers.hpp"
#include "loop_simulation.hpp"

using namespace hetflow::detail;
using namespace hetflow::sim;

namespace {

// The fast device as the H200 showed (perf/RESULTS.md): a kernel under `fill` iterations takes as
// long as one over `fill`, and a chunk costs `fixed` seconds outside its kernel (a quarter launch,
// three quarters late notice). The slow one is `slowdown` times slower with the same elbow, and
// costs 0.1 ms a chunk (PoCL's launch-and-wait round trip is ~50 us on the host's 16 cores).
// `cpu_seconds`, `fast_seconds`: the whole loop on the CPU alone and on the fast device alone.
struct Profile {
  std::string name;
  std::size_t n;
  Machine fast;  // the CPU and the fast device
  Machine both;  // the CPU and both devices
};

Profile fast_and_slow(std::string name, std::size_t n, unsigned workers, double cpu_seconds, double fast_seconds,
                      std::size_t fill, double fixed, double slowdown = 10) {
  const double peak = double(n) / (fast_seconds - fixed);
  Profile p{std::move(name), n, {}, {}};
  p.fast.workers = workers;
  p.fast.cpu_rate = double(n) / (cpu_seconds * (workers ? workers : 1));
  p.fast.cpu_chunk_cost = 5e-6;
  p.fast.devices = {SimDevice(filling(peak, fill), 0.25 * fixed, 0.75 * fixed)};
  p.both = p.fast;
  p.both.devices.push_back(SimDevice(filling(peak / slowdown, fill), 0.25e-4, 0.75e-4));
  return p;
}

std::vector<Profile> profiles() {
  return {
      fast_and_slow("Barnes-Hut 1M-like, 1 ms/chunk", 1'000'000, 15, 2.3, 0.019, 65'536, 1e-3),
      fast_and_slow("Barnes-Hut 1M-like, 0.3 ms/chunk", 1'000'000, 15, 2.3, 0.019, 65'536, 0.3e-3),
      fast_and_slow("SpMV 2^22-like (CPU 2x slower than the fast device), 1 ms/chunk", std::size_t(1) << 22, 15, 0.04,
                    0.019, 262'144, 1e-3),
      fast_and_slow("2 weak workers, 0.3 ms/chunk", 4'000'000, 2, 4.0, 0.020, 16'384, 0.3e-3),
      fast_and_slow("devices only (no CPU body), 1 ms/chunk", 1'000'000, 0, 2.3, 0.019, 65'536, 1e-3),
  };
}

// The best a fixed split of the CPU and the fast device does: the static share a user would give.
double best_static_share(const Machine& m, std::size_t n, double* seconds = nullptr) {
  double best = 1, best_t = 0;
  for (int i = 0; i <= 200; ++i) {
    StaticScheduler s(m.workers ? m.workers : 1, {i / 200.0});
    const double t = simulate(s, m, n).end();
    if (i == 0 || t <= best_t) best_t = t, best = i / 200.0;  // ties: the larger share
  }
  if (seconds) *seconds = best_t;
  return best;
}

std::unique_ptr<LoopScheduler> make(const std::string& spec, const Machine& m) {
  return make_loop_scheduler(spec, m.workers ? m.workers : 1, unsigned(m.devices.size()));
}

// Calls 1..learning may explore or search; the worst of the calls after them.
struct Run {
  double worst = 0;
  Outcome worst_call;
  bool each_once = true;
  std::vector<Outcome> calls;
};
Run run(LoopScheduler& s, const Machine& m, std::size_t n, int calls, int learning) {
  Run r;
  r.calls = calls_of(s, m, n, calls);
  for (int c = 0; c < calls; ++c) {
    r.each_once = r.each_once && each_once(r.calls[std::size_t(c)]);
    if (c >= learning && r.calls[std::size_t(c)].end() > r.worst)
      r.worst = r.calls[std::size_t(c)].end(), r.worst_call = r.calls[std::size_t(c)];
  }
  return r;
}

std::string shares(const Outcome& o, std::size_t n) {
  std::string s = std::to_string(int(100.0 * double(o.cpu_iterations) / double(n) + 0.5)) + " %";
  for (std::size_t d : o.per_device) s += " / " + std::to_string(int(100.0 * double(d) / double(n) + 0.5)) + " %";
  return s;
}

}  // namespace

TEST_CASE("with a second device ten times slower, no scheduler is slower than with the fast device alone") {
  for (const Profile& p : profiles()) {
    double best_static = 0;
    const double share = best_static_share(p.fast, p.n, &best_static);
    const double ideal_fast = ideal_seconds(p.fast, p.n), ideal_both = ideal_seconds(p.both, p.n);
    MESSAGE(p.name << ": ideal " << ideal_fast * 1e3 << " ms with the fast device, " << ideal_both * 1e3
                   << " ms with both; best static split on the fast device " << share << " (" << best_static * 1e3
                   << " ms)");
    // static:S as a user gives it, the best share for the fast device; dynamic at the fast device's elbow.
    const std::string spec_static = "static:" + std::to_string(share);
    for (const std::string& spec : {std::string("logfit"), std::string("hguided"), std::string("oracle"), spec_static,
                                    std::string("dynamic:65536")}) {
      CAPTURE(p.name);
      CAPTURE(spec);
      const bool oracle = spec == "oracle";
      const int calls = oracle ? 30 : 10, learning = oracle ? 22 : 2;
      auto one = make(spec, p.fast), two = make(spec, p.both);
      const Run a = run(*one, p.fast, p.n, calls, learning), b = run(*two, p.both, p.n, calls, learning);
      CHECK(a.each_once);
      CHECK(b.each_once);
      MESSAGE("  " << spec << ": fast device " << a.worst * 1e3 << " ms, both " << b.worst * 1e3 << " ms (x"
                   << b.worst / a.worst << "; shares " << shares(b.worst_call, p.n) << ", first call "
                   << b.calls[0].end() * 1e3 << " ms)");
      CHECK(b.worst <= 1.03 * a.worst);
    }
  }
}

TEST_CASE("a slow device never holds the end of a call: its last chunk ends with the other sides'") {
  for (const Profile& p : profiles())
    for (const char* spec : {"logfit", "hguided"}) {
      CAPTURE(p.name);
      CAPTURE(spec);
      auto s = make(spec, p.both);
      const Run r = run(*s, p.both, p.n, 10, 2);
      const Outcome& w = r.worst_call;
      MESSAGE(p.name << ", " << spec << ": worst call " << w.end() * 1e3 << " ms, the CPU ends at " << w.cpu_end * 1e3
                     << " ms, the fast device at " << w.device_ends[0] * 1e3 << ", the slow one at "
                     << w.device_ends[1] * 1e3 << " (shares " << shares(w, p.n) << ")");
      for (std::size_t c = 2; c < r.calls.size(); ++c) {
        const Outcome& o = r.calls[c];
        CAPTURE(c);
        CAPTURE(o.cpu_end);
        CAPTURE(o.device_ends[0]);
        CAPTURE(o.device_ends[1]);
        CHECK(o.device_ends[1] <= std::max(o.cpu_end, o.device_ends[0]) + 0.03 * o.end());
      }
    }
}

// LogFit leaves exploration on the slow device too and hands it work. Not asked here because not met
// yet (docs/parallel-for.md, issue 15): half of the ideal split's gain from the second device. A
// slow device whose every chunk under its elbow takes as long as its floor (12 ms of a 19 ms call
// here) is explored one safe sample per call, and LogFit settles it on 0.1-1.8 % of the range
// where 9 % would be ideal; the MESSAGE lines print where it stands (-s).
TEST_CASE("LogFit explores the second device, plans it and hands it work") {
  for (const Profile& p : profiles()) {
    CAPTURE(p.name);
    double best_static = 0;
    best_static_share(p.fast, p.n, &best_static);
    LogFitScheduler lf(p.both.workers ? p.both.workers : 1, 2);
    const Run r = run(lf, p.both, p.n, 10, 2);
    CHECK(r.each_once);
    CHECK(lf.phase(1) != LogFitScheduler::Phase::exploration);
    CHECK(lf.stable_chunk(1) > 0);
    const double gain = 1 - ideal_seconds(p.both, p.n) / ideal_seconds(p.fast, p.n);
    MESSAGE(p.name << ": LogFit over both " << r.worst * 1e3 << " ms, best static on the fast device "
                   << best_static * 1e3 << " ms, ideal gain " << gain * 100 << " %; slow device's share "
                   << 100.0 * double(r.worst_call.per_device[1]) / double(p.n) << " %");
    CHECK(r.worst_call.per_device[1] > 0);
  }
}

// Two controllers of one GPU (perf/run-gpu.sh's "the H100 twice"): the second copies the loop's
// reads with its first chunk of every call (LoopState::next_device), so that chunk's round trip
// holds the copy; the copy is a third of the call here (Barnes-Hut's 70 MB of bodies against a
// 20 ms call). LogFit and HGuided over both must do no worse than over the first alone. (On the
// H100, HGuided with the CPU over one GPU twice once took 0.23 s where this simulation gives 19 ms:
// perf/RESULTS.md 15:13Z; not explained by the copy.)
TEST_CASE("a device whose first chunk of each call carries the reads' copy does not slow the call") {
  const std::size_t n = 1'000'000;
  Profile p = fast_and_slow("Barnes-Hut 1M-like on one GPU twice", n, 15, 2.3, 0.019, 65'536, 1e-3);
  p.both.devices[1] = p.both.devices[0];
  p.both.devices[1].first_copy = 7e-3;
  for (const std::string spec : {"logfit", "hguided"}) {
    CAPTURE(spec);
    auto one = make(spec, p.fast), two = make(spec, p.both);
    const Run a = run(*one, p.fast, n, 10, 2), b = run(*two, p.both, n, 10, 2);
    CHECK(b.each_once);
    MESSAGE(spec << ": first device " << a.worst * 1e3 << " ms, both " << b.worst * 1e3 << " ms (shares "
                 << shares(b.worst_call, n) << ")");
    CHECK(b.worst <= 1.03 * a.worst);
  }
}

TEST_CASE("over devices of unequal speed every scheduler hands out the whole range itself") {
  // Whatever the scheduler hands to nobody, the last token standing runs (LoopState::take): on
  // whichever side happens to ask last, the slow device included. No scheduler should leave it to
  // that; with no CPU body a static split gives the CPU's part to the devices.
  for (const Profile& p : profiles())
    for (const char* spec : {"logfit", "hguided", "oracle", "static:0.5", "static:0.6,0.1", "dynamic:1000"})
      for (std::size_t n : {std::size_t(1), std::size_t(63), std::size_t(100'003), std::size_t(3'000'001)}) {
        CAPTURE(p.name);
        CAPTURE(spec);
        CAPTURE(n);
        auto s = make(spec, p.both);
        for (const Outcome& o : calls_of(*s, p.both, n, 3)) {
          CHECK(each_once(o));
          CHECK(o.cpu_iterations + o.device_iterations == n);
          CHECK(o.leftover == 0);
        }
      }
}

// Barnes-Hut's bodies in tree order cost 5 to 48 us each by region (loop_simulation.hpp's
// barnes_hut_cost). On two H100s with 31 CPU workers the CPU's packages at the end of a call were
// sized from the throughput of whatever chunks a worker ran last, and held the call: with the CPU,
// LogFit and HGuided took 0.0226 and 0.0231 s where HGuided over the devices alone took 0.0162, and
// over one GPU twice 0.131 and 0.054 s (perf/RESULTS.md, 2026-11-25 16:58Z); simulated with a
// throughput from the latest chunks (the old running mean put back for one run), LogFit's CPU ended
// a call at 46.9 ms where the GPU ended at 24.5.
// With the cost learned by region (CpuCostProfile) the CPU, about 1 % of the loop there, must not
// end after the devices by more than a CPU package (3 % of the call), and the call must not be
// slower than on the devices alone — by more than 6 % over two GPUs with LogFit, whose planned
// devices leave a GPU's floor (1.2 ms) to the CPU rather than come back for a few iterations.
// Over two GPUs LogFit's CPU profile takes several calls to learn the reversed costs (the CPU
// ended up to 1 ms after the GPUs until the 6th call, in simulation): the first 8 calls learn.
TEST_CASE("an irregular loop's CPU packages do not hold the devices back") {
  const std::size_t n = 1'000'000;
  for (const bool reversed : {false, true})
    for (const unsigned gpus : {1u, 2u}) {
      Machine with_cpu;
      with_cpu.workers = 31;
      with_cpu.cpu_rate = double(n) / (1.65 * 31);
      with_cpu.cpu_chunk_cost = 5e-6;
      with_cpu.cost = barnes_hut_cost(n, reversed);
      const double fixed = 0.5e-3, peak = double(n) / (0.0228 - fixed);
      with_cpu.devices.assign(gpus, SimDevice(filling(peak, 65'536), 0.25 * fixed, 0.75 * fixed));
      Machine devices_only = with_cpu;
      devices_only.workers = 0;
      for (const std::string spec : {"logfit", "hguided"}) {
        CAPTURE(reversed);
        CAPTURE(gpus);
        CAPTURE(spec);
        auto alone = make(spec, devices_only), both = make(spec, with_cpu);
        const Run a = run(*alone, devices_only, n, 16, 8), b = run(*both, with_cpu, n, 16, 8);
        CHECK(b.each_once);
        const Outcome& w = b.worst_call;
        MESSAGE(gpus << " GPU(s), cost " << std::string(reversed ? "reversed" : "as measured") << ", " << spec
                     << ": devices alone " << a.worst * 1e3 << " ms, with the CPU " << b.worst * 1e3
                     << " ms (CPU ends at " << w.cpu_end * 1e3 << " ms, devices at " << w.device_end * 1e3
                     << "; shares " << shares(w, n) << ")");
        CHECK(w.cpu_end <= w.device_end + 0.03 * w.end());
        CHECK(b.worst <= (gpus == 2 && spec == "logfit" ? 1.06 : 1.03) * a.worst);
      }
    }
}

// Two GPUs a loop does not fill (N-body 64K over two H100s: a chunk's kernel takes about
// (chunk + 38.6K) / peak, fitted to perf/RESULTS.md's runs) and 31 CPU workers far slower. On that
// host a notice came back up to 23 ms late while every core ran a CPU chunk (perf/RESULTS.md, "the
// notices wait for a core"), and LogFit then ran every later call on one GPU: the cost outside the
// kernel it learned from the late notice stopped that GPU's token each call, and a stopped device
// learns nothing. One late notice must not decide the calls after it.
TEST_CASE("two GPUs the loop does not fill: one late notice does not lock LogFit into one of them") {
  const std::size_t n = 65'536;
  const double peak = double(n) / 2.58e-3;
  Machine one;
  one.workers = 31;
  one.cpu_rate = double(n) / (1.07 * 31);
  one.cpu_chunk_cost = 5e-6;
  one.devices = {SimDevice(saturating(peak, 38'600), 0.25e-4, 0.75e-4)};
  LogFitScheduler alone(31, 1);
  const Run a = run(alone, one, n, 24, 3);
  for (const int late_device : {-1, 0, 1})
    for (const int late_chunk : {1, 2, 3, 5}) {
      if (late_device < 0 && late_chunk > 1) continue;
      CAPTURE(late_device);
      CAPTURE(late_chunk);
      Machine two = one;
      two.devices.push_back(two.devices[0]);
      auto chunks = std::make_shared<int>(0);
      if (late_device >= 0)
        two.devices[std::size_t(late_device)].late = [chunks, late_chunk] {
          return ++*chunks == late_chunk ? 18.5e-3 : 0.0;
        };
      LogFitScheduler both(31, 2);
      // It may take a sample a call to learn the GPU that was late again (its exploring chunks are
      // cut to end with the other's), but from the 7th call none is 10 % slower than one GPU, and
      // from the 19th the loop is split (each GPU a fifth at least) and 20 % faster than one GPU.
      const Run b = run(both, two, n, 24, 18);
      CHECK(b.each_once);
      double learning_worst = 0;
      for (std::size_t c = 6; c < 18; ++c) learning_worst = std::max(learning_worst, b.calls[c].end());
      MESSAGE("late notice on device " << late_device << "'s chunk " << late_chunk << ": one GPU " << a.worst * 1e3
                                       << " ms, two " << b.worst * 1e3 << " ms (shares " << shares(b.worst_call, n)
                                       << "), calls 6-17 at worst " << learning_worst * 1e3 << " ms");
      for (std::size_t c = 18; c < b.calls.size(); ++c) {
        CAPTURE(c);
        CHECK(b.calls[c].per_device[0] >= n / 5);
        CHECK(b.calls[c].per_device[1] >= n / 5);
      }
      CHECK(b.worst <= 0.8 * a.worst);
      CHECK(learning_worst <= 1.1 * a.worst);
    }
}

// SpMV over an R-MAT matrix of 2^22 rows (loop_simulation.hpp's rmat_row_cost and rmat_kernel): the
// range's front holds most of the non-zeros, and a GPU chunk lasts at least as long as its heaviest
// row — on two H200s every chunk starting at row 0 took 7.8 ms whatever its size (perf/RESULTS.md,
// 2026-11-25 23:53Z). There LogFit over the CPU and one GPU took 0.0184-0.0189 s, ahead of the GPU
// alone (0.020), by giving the CPU nearly all; over two GPUs it was no faster (0.0188-0.0214).
// Asked here: over the CPU and one GPU LogFit is never behind the GPU alone (issue 15: at most 3 %),
// after the learning calls. Printed, not yet asked (issue 15's next step, a device model that knows
// where a chunk lies): over two GPUs it should beat one GPU, and in this simulation, as there, it
// does not — the home GPU is handed the front rows first. 78995c9's LogFit did better in this
// simulation (11.3 ms on one GPU, 13.3 on two, against 13.9 and 17.0): the planning that splits
// GPUs a loop does not fill evenly (ends_within) misreads a chunk whose time is its first row's.
// Measured on one H100 it lost nothing (perf/RESULTS.md, 23:44Z: -22.7 % against -19.5 %). Since the
// CPU's rate is its mean over the rest of the range (2026-11-26) one GPU takes 18.8 ms here, two 15.9.
// This kernel shape is no longer SpMV's (kernels_cl/spmv.cl gives a row 32 work-items since then);
// the case stays for kernels whose chunk lasts as long as its costliest iteration.
TEST_CASE("on SpMV's power-law rows LogFit over the CPU and one GPU is not behind the GPU alone") {
  const unsigned scale = 22;
  const std::size_t n = std::size_t(1) << scale;
  const double cpu_alone = 0.016, gpu_alone = 0.020, fixed = 0.3e-3;
  const auto kernel = rmat_kernel(scale, double(n) / (gpu_alone - fixed), 7.8e-3);
  auto machine = [&](unsigned gpus, unsigned workers) {
    Machine m;
    m.workers = workers;
    m.cpu_rate = double(n) / (cpu_alone * 31);
    m.cpu_chunk_cost = 5e-6;
    m.cost = [](std::size_t r) { return rmat_row_cost(r, scale); };
    SimDevice gpu(saturating(1, 1), 0.25 * fixed, 0.75 * fixed);
    gpu.kernel = kernel;
    m.devices.assign(gpus, gpu);
    return m;
  };
  const Machine one = machine(1, 31), two = machine(2, 29);
  LogFitScheduler lf1(31, 1), lf2(29, 2);
  const Run a = run(lf1, one, n, 9, 3), b = run(lf2, two, n, 9, 3);
  CHECK(a.each_once);
  CHECK(b.each_once);
  MESSAGE("SpMV 2^22-like: CPU alone " << cpu_alone * 1e3 << " ms, one GPU alone " << gpu_alone * 1e3
                                       << " ms; LogFit over the CPU and one GPU " << a.worst * 1e3 << " ms (shares "
                                       << shares(a.worst_call, n) << "), over two GPUs " << b.worst * 1e3
                                       << " ms (shares " << shares(b.worst_call, n) << ")");
  CHECK(a.worst <= 1.03 * gpu_alone);
}

// Mandelbrot by rows over two GPUs (tools/workloads/mandelbrot_loop.hpp at 4096x4096, 2048
// iterations; loop_simulation.hpp's mandelbrot_row_cost): the middle rows cross the set and cost up
// to 3.3 times the mean, the top and bottom rows a hundredth of it. On two H200s one GPU took
// 4.2-4.3 ms a call and every scheduler ran the loop on one of them (perf/RESULTS.md, two H200s,
// bcf99d4 at 00:09Z: HGuided 0/100/0 with and without the CPU, LogFit with the CPU 3/0/97), where
// halves take ~2.2 ms. The GPU here runs the rows in 4.2 ms with 0.1 ms a chunk outside its kernel
// (a quarter launch, three quarters notice, as the two H100s' N-body runs above) and is full from 64
// rows (~270K work-items, what an H200 holds resident); the CPU is 300x slower (31 workers: 1.2 s).
// Read by size alone, a chunk's throughput made the GPU that ran the cheap top rows look 20-100x
// faster than the one that ran the middle (docs/parallel-for.md, "Mandelbrot's rows"); LogFit now
// measures the devices in work by region (src/loop_region_work.hpp), which two GPUs of one model
// (LoopState tells it so by their names) pin down from the calls themselves.
namespace {
struct MandelbrotRun {
  Run one, two;
  std::string decisions;  // the two-GPU scheduler's, after its last call
};
// `noise`: each kernel's time off by up to that fraction either way (a fixed pseudo-random sequence).
MandelbrotRun mandelbrot_over_two_gpus(const std::string& spec, unsigned workers, bool one_model, std::size_t n = 4096,
                                       int calls = 16, double noise = 0) {
  const double gpu_alone = 4.2e-3, fixed = 0.1e-3;
  auto machine = [&](unsigned gpus, unsigned w) {
    Machine m;
    m.workers = w;
    m.cpu_rate = double(n) / (1.2 * 31);
    m.cpu_chunk_cost = 5e-6;
    m.cost = mandelbrot_row_cost(n);
    m.devices.assign(gpus, SimDevice(filling(double(n) / (gpu_alone - fixed), 64), 0.25 * fixed, 0.75 * fixed));
    if (noise > 0) {
      auto before = std::make_shared<std::vector<double>>(n + 1, 0.0);
      for (std::size_t i = 0; i < n; ++i) (*before)[i + 1] = (*before)[i] + m.cost(i);
      auto state = std::make_shared<unsigned>(12345u);
      const Rate rate = filling(double(n) / (gpu_alone - fixed), 64);
      for (SimDevice& d : m.devices)
        d.kernel = [before, state, rate, noise](std::size_t begin, std::size_t size) {
          *state = *state * 1103515245u + 12345u;
          const double u = double((*state >> 8) & 0xffff) / 65535.0 * 2 - 1;
          const double mean = ((*before)[begin + size] - (*before)[begin]) / double(size);
          return double(size) * mean / rate(size) * (1 + noise * u);
        };
    }
    return m;
  };
  const Machine one = machine(1, 0), two = machine(2, workers);
  auto alone = make(spec, one), both = make(spec, two);
  if (one_model) both->same_kind({0, 0});
  // The first calls learn (with the CPU, the first one probes it: 64 rows a worker, ~0.6 s).
  MandelbrotRun r{run(*alone, one, n, calls, 8), run(*both, two, n, calls, 8), {}};
  r.decisions = both->decisions();
  MESSAGE(spec << ", " << workers << " CPU workers, " << std::string(one_model ? "one model" : "models not known")
               << ": one GPU " << r.one.worst * 1e3 << " ms, two " << r.two.worst * 1e3 << " ms (x"
               << r.two.worst / r.one.worst << "; shares " << shares(r.two.worst_call, n) << ")");
  return r;
}
}  // namespace

TEST_CASE(
    "Mandelbrot's rows over two GPUs of one model: LogFit gives both a share and the call is near half of one "
    "GPU's") {
  for (unsigned workers : {0u, 29u}) {
    CAPTURE(workers);
    const MandelbrotRun r = mandelbrot_over_two_gpus("logfit", workers, true);
    CHECK(r.two.each_once);
    // What the debug log shows of it: each device's model and the work by region. Once the rows
    // are split at halves call after call, that one edge is most of what the calls teach: the
    // weights then say how the halves' work compares, not the rows' shape.
    MESSAGE(r.decisions);
    CHECK(r.decisions.find("device 1 final") != std::string::npos);
    CHECK(r.decisions.find("work by region") != std::string::npos);
    for (std::size_t k = 8; k < r.two.calls.size(); ++k) {
      CAPTURE(k);
      CHECK(r.two.calls[k].per_device[0] >= 4096 / 5);
      CHECK(r.two.calls[k].per_device[1] >= 4096 / 5);
      CHECK(r.two.calls[k].end() <= 0.65 * r.one.worst);
      CHECK(r.two.calls[k].end() <= 0.6 * 4.2e-3);  // 1.67x one GPU's kernels at least
    }
  }
}

// Kernel times are not exact: with each off by up to 3 % either way, the split still holds once
// learnt (at 5 %, one call in 25 of one case fell back to one GPU; at 10 % it does not settle:
// docs/parallel-for.md, "Mandelbrot's rows").
TEST_CASE("Mandelbrot's rows over two GPUs of one model, kernel times off by up to 3 %: LogFit's split holds") {
  for (std::size_t n : {std::size_t(4096), std::size_t(16384)})
    for (unsigned workers : {0u, 29u}) {
      CAPTURE(n);
      CAPTURE(workers);
      const MandelbrotRun r = mandelbrot_over_two_gpus("logfit", workers, true, n, 40, 0.03);
      CHECK(r.two.each_once);
      for (std::size_t k = 15; k < r.two.calls.size(); ++k) {
        CAPTURE(k);
        CHECK(r.two.calls[k].end() <= 0.65 * 4.2e-3);
      }
    }
}

// Two GPUs not known to be of one model, each keeping to its part of the range (one the cheap top,
// the other the middle), cannot tell a fast device from a cheap part: LogFit may keep to one, but
// never ends later than with one GPU alone.
TEST_CASE(
    "Mandelbrot's rows over two GPUs of unknown models: no call after the learning ones is slower than one GPU's") {
  for (unsigned workers : {0u, 29u}) {
    CAPTURE(workers);
    const MandelbrotRun r = mandelbrot_over_two_gpus("logfit", workers, false);
    CHECK(r.two.each_once);
    CHECK(r.two.worst <= 1.02 * r.one.worst);
  }
}

// HGuided's packages still follow each device's best throughput by size alone, which the cheap top
// rows set for good: it keeps the loop on one GPU. Not met yet, so marked should_fail: remove the
// mark once it passes.
TEST_CASE("Mandelbrot's rows over two GPUs of one model: HGuided gives both a share" * doctest::should_fail()) {
  for (unsigned workers : {0u, 29u}) {
    CAPTURE(workers);
    const MandelbrotRun r = mandelbrot_over_two_gpus("hguided", workers, true);
    CHECK(r.two.each_once);
    for (std::size_t k = 8; k < r.two.calls.size(); ++k) {
      CAPTURE(k);
      CHECK(r.two.calls[k].per_device[1] >= 4096 / 5);
      CHECK(r.two.calls[k].end() <= 0.65 * r.one.worst);
    }
  }
}

// SpMV since its kernel gives a row 32 work-items and its matrix stays on the devices (perf/RESULTS.md,
// 2026-11-26 01:37Z): one H200 runs 2^22 rows in ~2.5 ms of kernel, 31 CPU workers in 38 ms, so the
// CPU's fair share is a few percent. Measured over two H200s and 29 workers, LogFit took 12 ms a call:
// the GPUs stopped with 600,000 rows left to the CPU, whose chunks then shrank round after round.
// Simulated with R-MAT's rows, a CPU chunk's overhead 20-400 us, the scheduler before 2026-11-26 took
// 8-56 ms at worst (one call 1.6 s): the CPU's rate came from the range's tail, where the rows are
// nearly empty, so the GPUs stopped at once; and a bin of the CPU's profile no chunk had covered was
// priced at the mean, so a worker was handed R-MAT's heavy rows at 2^21 + 2^20 as a 1 ms chunk that
// took 17. Asked: after the learning calls, no call slower than one GPU alone (now 0.6x at 20-100 us).
TEST_CASE("on SpMV's rows over two GPUs the CPU's last chunks do not trickle") {
  const unsigned scale = 22;
  const std::size_t n = std::size_t(1) << scale;
  const double cpu_alone = 0.038, gpu_kernel = 2.5e-3, fixed = 0.3e-3;
  auto machine = [&](unsigned gpus, unsigned workers, double chunk_cost) {
    Machine m;
    m.workers = workers;
    m.cpu_rate = double(n) / (cpu_alone * 31);
    m.cpu_chunk_cost = chunk_cost;
    m.cost = [](std::size_t r) { return rmat_row_cost(r, scale); };
    SimDevice gpu(saturating(1, 1), 0.25 * fixed, 0.75 * fixed);
    gpu.kernel = rmat_kernel(scale, double(n) / gpu_kernel, 0.2e-3);
    m.devices.assign(gpus, gpu);
    return m;
  };
  for (double chunk_cost : {20e-6, 100e-6, 400e-6}) {
    CAPTURE(chunk_cost);
    LogFitScheduler one_gpu(0, 1), two(29, 2);
    HGuidedScheduler devs_only(0, 2);
    const Run a = run(one_gpu, machine(1, 0, chunk_cost), n, 12, 6);
    const Run b = run(two, machine(2, 29, chunk_cost), n, 12, 6);
    const Run h = run(devs_only, machine(2, 0, chunk_cost), n, 12, 6);
    CHECK(b.each_once);
    std::string calls;
    for (const auto& o : b.calls) calls += std::to_string(o.end() * 1e3).substr(0, 5) + " ";
    MESSAGE("chunk cost " << chunk_cost * 1e6 << " us: one GPU " << a.worst * 1e3 << " ms; two GPUs, HGuided "
                          << h.worst * 1e3 << " ms; two GPUs and the CPU, LogFit " << b.worst * 1e3 << " ms (shares "
                          << shares(b.worst_call, n) << ", " << b.worst_call.cpu_chunks
                          << " CPU chunks); calls: " << calls);
    CHECK(b.worst <= a.worst);
  }
}

// SpMV 2^22 on one H100 and 15 CPU workers (perf/RESULTS.md, 2026-11-27 02:36Z): the kernel gives a row
// 32 work-items, so most of a chunk's time is its rows' count and the rest their non-zeros (the GPU's
// kernel over the first 88 % of the rows took 1.26 ms, over all 1.39); x goes over first (0.3 ms),
// y comes back after (0.3 ms), 0.15 ms a chunk outside its kernel; the CPU alone took 45 ms on 16
// workers. R-MAT's tail rows are nearly empty: a static split giving the CPU the last 12 % took 2.0 ms
// a call, the GPU alone 2.2, and LogFit gave the GPU everything call after call. Its CPU profile knew
// only the front rows its first call ran (R-MAT's heaviest, up to ~10,000x the tail's per row) and
// priced the rest as the costliest of them: no CPU iteration seemed to end in time, so the CPU never
// ran the tail and never learned otherwise. Asked: after the learning calls, LogFit within 3 % of the
// best static split, which here is well ahead of the GPU alone. Scale 20, every time a quarter, keeps
// the case short. The scheduler before 2026-11-27 fails it (every call on the GPU, 0.505 ms; the best
// static split 0.462); docs/parallel-for.md "A light tail the CPU never learns" says what passes it,
// and what that measured on the H100.
namespace {
// SpMV over an R-MAT matrix of 2^scale rows whose kernel gives a row 32 work-items: most of a GPU
// chunk's time is its rows' count (80 %), the rest their non-zeros; `gpu_kernel` for every row, x's
// `copy` over before a GPU's first kernel of a call and as long for all of y back; the CPU alone
// takes `cpu_alone` on `cpu_cores` cores, `workers` of them the loop's.
Machine spmv_rows(unsigned scale, unsigned workers, unsigned cpu_cores, double cpu_alone, double gpu_kernel,
                  double fixed, double copy, std::size_t gpus) {
  const std::size_t n = std::size_t(1) << scale;
  auto before = std::make_shared<std::vector<double>>(n + 1, 0.0);
  for (std::size_t r = 0; r < n; ++r) (*before)[r + 1] = (*before)[r] + rmat_row_cost(r, scale);
  Machine m;
  m.workers = workers;
  m.cpu_rate = double(n) / (cpu_alone * cpu_cores);
  m.cpu_chunk_cost = 5e-6;
  m.cost = [scale](std::size_t r) { return rmat_row_cost(r, scale); };
  SimDevice gpu(saturating(1, 1), 0.25 * fixed, 0.75 * fixed, copy);
  gpu.kernel = [before, per_row = 0.8 * gpu_kernel / double(n), per_work = 0.2 * gpu_kernel / double(n)](
                   std::size_t begin, std::size_t size) {
    return 5e-6 + per_row * double(size) + per_work * ((*before)[begin + size] - (*before)[begin]);
  };
  gpu.back = copy / double(n);
  m.devices.assign(gpus, gpu);
  return m;
}
}  // namespace

TEST_CASE("on SpMV's power-law rows LogFit learns that the CPU can take the light tail") {
  const unsigned scale = 20;
  const std::size_t n = std::size_t(1) << scale;
  const Machine m = spmv_rows(scale, 15, 16, 0.045 / 4, 1.4e-3 / 4, 0.15e-3 / 4, 0.3e-3 / 4, 1);
  double best_static = 0, share = 1;
  for (int i = 70; i <= 100; ++i) {
    StaticScheduler s(m.workers, {i / 100.0});
    const double t = simulate(s, m, n).end();
    if (i == 70 || t <= best_static) best_static = t, share = i / 100.0;
  }
  StaticScheduler alone(m.workers, {1.0});
  const double gpu_alone = simulate(alone, m, n).end();
  LogFitScheduler lf(m.workers, 1);
  const Run r = run(lf, m, n, 12, 4);
  CHECK(r.each_once);
  std::string calls;
  for (const auto& o : r.calls) calls += std::to_string(o.end() * 1e3).substr(0, 5) + " ";
  MESSAGE("SpMV 2^20, one GPU and 15 workers: the GPU alone "
          << gpu_alone * 1e3 << " ms, the best static split " << share << " " << best_static * 1e3 << " ms; LogFit "
          << r.worst * 1e3 << " ms at worst (shares " << shares(r.worst_call, n) << "); calls: " << calls);
  REQUIRE(best_static <= 0.95 * gpu_alone);  // the case is worth asking
  CHECK(r.worst <= 1.03 * best_static);
  // The CPU's share, once known, in about one chunk per worker: in shrinking chunks (~150 a call)
  // the same split cost the H100 0.5 ms a call that this simulator does not see.
  for (std::size_t c = 6; c < r.calls.size(); ++c) {
    CAPTURE(c);
    CHECK(r.calls[c].cpu_chunks <= 2 * m.workers);
  }
}

// SpMV 2^24 over two H200s and 31 workers (perf/RESULTS.md, 2026-11-28 15:18Z), at a sixteenth of
// the size and times: each GPU moves x over before its first kernel of a call (1.2 ms there), runs
// its rows (a row's 32 work-items most of the time, its non-zeros the rest: 6 ms for the whole
// matrix on one GPU) and brings its rows of y back (1.2 ms for all); the CPU alone took 0.36 s.
// There the front GPU's share (7.1M rows) came back whole, 0.5 ms after its kernel, every call,
// while the other GPU's came back in pieces under its next piece's kernel: the front GPU's
// exploration, at R-MAT's heavy first rows, ran out of range before its samples levelled off, its
// elbow was taken as half the range, and pieces had to be at least that. Asked: after the learning
// calls LogFit is within 3 % of the best static split.
TEST_CASE("on SpMV's power-law rows over two GPUs LogFit hides both GPUs' transfers back") {
  const unsigned scale = 20;
  const std::size_t n = std::size_t(1) << scale;
  const Machine m = spmv_rows(scale, 31, 31, 0.36 / 16, 6e-3 / 16, 0.2e-3 / 16, 1.2e-3 / 16, 2);
  // The best split the CPU's share and the front GPU's part of the rest make (a grid around it).
  double best_static = 0, cpu_share = 0, front = 0;
  for (int c : {0, 3, 6, 9})
    for (int f = 40; f <= 52; f += 2) {
      const double rest = 1 - c / 100.0;
      StaticScheduler s(m.workers, {rest * f / 100.0, rest * (1 - f / 100.0)});
      const double t = simulate(s, m, n).end();
      if (best_static == 0 || t < best_static) best_static = t, cpu_share = c / 100.0, front = f / 100.0;
    }
  Machine one = m;
  one.devices.pop_back();
  StaticScheduler alone(m.workers, {1.0});
  const double gpu_alone = simulate(alone, one, n).end();
  LogFitScheduler lf(m.workers, 2);
  lf.same_kind({0, 0});  // as LoopState tells it of two GPUs of one name
  const Run r = run(lf, m, n, 12, 5);
  CHECK(r.each_once);
  std::string calls;
  for (const auto& o : r.calls) calls += std::to_string(o.end() * 1e3).substr(0, 5) + " ";
  MESSAGE("SpMV 2^20, two GPUs and 31 workers: one GPU alone "
          << gpu_alone * 1e3 << " ms, the best static split (CPU " << cpu_share << ", the front GPU " << front
          << " of the rest) " << best_static * 1e3 << " ms; LogFit " << r.worst * 1e3 << " ms at worst (shares "
          << shares(r.worst_call, n) << ", " << r.worst_call.device_pieces << " pieces); calls: " << calls);
  CHECK(r.worst <= 1.03 * best_static);
}

// One of two GPUs of one model whose first notices come late (2.5 and 5.5 ms, as the second H200's
// did, perf/RESULTS.md 2026-11-28 15:43Z) explores a size a call while the other plans the rest; and
// the exploration's samples, taken at Mandelbrot's cheap top rows, predicted 6.9x what a half of the
// rows then ran at, so each GPU's first planned chunks were judged slow and the GPUs went back to
// exploring in turn, a call at one GPU's time each: calls 4-10 of 14 all on one GPU (4096 rows, no
// CPU), 8192 rows never settled. A device's first planned chunk after exploring is learned from, not
// judged; once settled, the split holds.
TEST_CASE("Mandelbrot's rows over two GPUs, one GPU's first notices late: LogFit settles and the split holds") {
  for (std::size_t n : {std::size_t(4096), std::size_t(8192)})
    for (unsigned workers : {0u, 29u}) {
      CAPTURE(n);
      CAPTURE(workers);
      const double gpu_alone = 4.2e-3 * double(n) / 4096, fixed = 0.1e-3;
      Machine m;
      m.workers = workers;
      m.cpu_rate = double(n) / (1.2 * 31);
      m.cpu_chunk_cost = 5e-6;
      m.cost = mandelbrot_row_cost(n);
      m.devices.assign(2, SimDevice(filling(double(n) / (gpu_alone - fixed), 64), 0.25 * fixed, 0.75 * fixed));
      auto chunks = std::make_shared<int>(0);
      m.devices[1].late = [chunks] {
        ++*chunks;
        return *chunks == 1 ? 2.5e-3 : *chunks == 2 ? 5.5e-3 : 0.0;
      };
      LogFitScheduler lf(workers, 2);
      lf.same_kind({0, 0});
      const Run r = run(lf, m, n, 16, 3);
      CHECK(r.each_once);
      std::string calls;
      for (const auto& o : r.calls)
        calls += std::to_string(o.end() * 1e3).substr(0, 5) + " (" + std::to_string(o.per_device[0]) + "/" +
                 std::to_string(o.per_device[1]) + ") ";
      MESSAGE(n << " rows, " << workers << " workers: " << calls);
      for (std::size_t k = 9; k < r.calls.size(); ++k) {
        CAPTURE(k);
        CHECK(r.calls[k].end() <= 0.6 * gpu_alone);
      }
    }
}
