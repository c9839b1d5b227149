// The loop schedulers (src/loop_schedulers.hpp) on a simulated clock (tests/loop_simulation.hpp):
// fake devices whose throughput grows with the chunk and saturates (the curve with an elbow that
// LogFit looks for). Several devices of unequal speed: tests/test_loop_schedulers_devices.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <hetflow/errors.hpp>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "loop_device_price.hpp"
#include "loop_scheduler_spec.hpp"
#include "loop_schedulers.hpp"
#include "loop_simulation.hpp"

using namespace hetflow::detail;
using namespace hetflow::sim;

namespace {

std::vector<std::unique_ptr<LoopScheduler>> every_scheduler(unsigned workers, unsigned devices) {
  std::vector<std::unique_ptr<LoopScheduler>> v;
  v.push_back(std::make_unique<LogFitScheduler>(workers, devices));
  v.push_back(std::make_unique<StaticScheduler>(workers, std::vector<double>(devices, 0.7 / devices)));
  v.push_back(std::make_unique<StaticScheduler>(workers, std::vector<double>(devices, 0.0)));
  v.push_back(std::make_unique<StaticScheduler>(workers, std::vector<double>(devices, 1.0 / devices)));
  v.push_back(std::make_unique<DynamicScheduler>(workers, devices, 1000));
  v.push_back(std::make_unique<HGuidedScheduler>(workers, devices));
  v.push_back(std::make_unique<OracleScheduler>(workers, devices));
  return v;
}

}  // namespace

TEST_CASE("round_up_64 keeps exact multiples, never exceeds the cap, never gives 0") {
  CHECK(round_up_64(64, 1000) == 64);
  CHECK(round_up_64(128, 1000) == 128);
  CHECK(round_up_64(65, 1000) == 128);
  CHECK(round_up_64(1, 1000) == 64);
  CHECK(round_up_64(1, 10) == 10);
  CHECK(round_up_64(0, 10) == 1);
}

TEST_CASE("every scheduler runs every iteration exactly once, whatever the size, workers and devices") {
  for (unsigned devices : {1u, 2u})
    for (unsigned workers : {1u, 4u, 16u})
      for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(63), std::size_t(64), std::size_t(65),
                            std::size_t(1000), std::size_t(100'003), std::size_t(2'000'000)})
        for (auto& s : every_scheduler(workers, devices)) {
          CAPTURE(devices);
          CAPTURE(workers);
          CAPTURE(n);
          CAPTURE(s->name());
          Machine m;
          m.workers = workers;
          m.devices.assign(devices, saturating(4e7, 4096));
          double last = 0;
          for (int call = 0; call < 3; ++call) {  // state persists across calls
            const Outcome o = simulate(*s, m, n, last);
            CHECK(each_once(o));
            CHECK(o.cpu_iterations + o.device_iterations == n);
            last = o.end();
          }
        }
}

TEST_CASE("without a device body every scheduler keeps the workers busy to the end in few chunks") {
  // Guided self-scheduling (LoopScheduler::cpu_only_chunk); dynamic keeps its chunks of C. Before,
  // LogFit cut such a loop into 64-iteration chunks for good, waiting for a device to measure.
  const std::size_t n = std::size_t(1) << 20;
  for (unsigned workers : {1u, 4u, 31u}) {
    Machine m;
    m.workers = workers;
    m.cpu_rate = 1e7;
    m.cpu_chunk_cost = 2e-6;
    m.devices.clear();
    m.cost = barnes_hut_cost(n);  // irregular: the last chunks must still end together
    const double ideal = double(n) / (double(workers) * m.cpu_rate);
    for (auto& s : every_scheduler(workers, 1)) {
      CAPTURE(workers);
      CAPTURE(s->name());
      const bool fixed = s->name().starts_with("dynamic");
      for (const Outcome& o : calls_of(*s, m, n, 3)) {
        CHECK(each_once(o));
        CHECK(o.device_iterations == 0);
        CHECK(o.leftover == 0);
        if (fixed) {
          CHECK(o.cpu_chunks == (n + 999) / 1000);
        } else {
          CHECK(o.cpu_chunks <= std::size_t(2.0 * workers * std::log(double(n)) + workers));
          CHECK(o.end() <= 1.1 * ideal + double(o.cpu_chunks) * m.cpu_chunk_cost / workers + 1e-4);
        }
      }
    }
  }
}

TEST_CASE("static gives each device its share in one chunk, dynamic cuts fixed chunks") {
  Machine m;
  m.devices.assign(2, saturating(4e7, 4096));
  StaticScheduler st(4, {0.25, 0.5});
  const Outcome o = simulate(st, m, 100'000);
  CHECK(o.per_device[0] == 25'000);
  CHECK(o.per_device[1] == 50'000);
  CHECK(o.device_chunks == 2);
  DynamicScheduler dy(4, 2, 1000);
  const Outcome d = simulate(dy, m, 100'000);
  CHECK(d.device_chunks * 1000 == d.device_iterations);
}

TEST_CASE("LogFit finds the elbow, goes stable, and its final phase ends both sides together") {
  Machine m;
  m.workers = 16;
  LogFitScheduler lf(m.workers);
  const std::size_t n = 50'000'000;
  const Outcome first = simulate(lf, m, n);
  CHECK(each_once(first));
  CHECK(lf.phase() != LogFitScheduler::Phase::exploration);
  // Doubling a chunk c gains 4096 / (2c + 4096) here: under 5 % from c ≈ 39,000 on.
  CHECK(lf.stable_chunk() >= 16'384);
  CHECK(lf.stable_chunk() <= 262'144);
  CHECK(lf.fit_a() > 0);
  const Outcome second = simulate(lf, m, n, first.end());  // a later call: the model is kept
  CHECK(each_once(second));
  CHECK(std::abs(second.cpu_end - second.device_end) <= 0.05 * second.end());
  const double efficiency = ideal_seconds(m, n) / second.end();
  MESSAGE("LogFit efficiency on the simulated machine: " << efficiency << ", stable chunk " << lf.stable_chunk());
  CHECK(efficiency >= 0.9);
}

// A device whose chunks' results take a while to come back (Mandelbrot 8192² on one H100: a sixth of
// the call): the next chunk's kernel hides a chunk's transfer back, but nothing hides the last one's,
// so LogFit cuts a share whose transfer back would hold the call's end. Here the device's share is
// 8 ms of kernels and 3.2 ms of transfers back, a chunk costs 70 us besides: in one chunk the call
// takes 11.3 ms; in k, 8 + 0.07 (k - 1) + 3.2 / k. The CPU workers, where there are any, cannot end
// an iteration within the call (as Mandelbrot's middle rows on one core): the share is cut only then,
// since the rest of it is handed out again and the workers may take from it.
TEST_CASE("LogFit cuts a device's share where its transfer back would hold the call's end") {
  for (unsigned workers : {0u, 4u}) {
    CAPTURE(workers);
    Machine m;
    m.workers = workers;
    m.cpu_rate = 50;  // 20 ms an iteration
    m.devices = {SimDevice(filling(1e9, 1 << 14), 20e-6, 50e-6)};
    m.devices[0].back = 0.4e-9;
    const std::size_t n = 8'000'000;
    LogFitScheduler lf(workers);
    double last = 0;
    Outcome o;
    for (int call = 0; call < 12; ++call) {
      o = simulate(lf, m, n, last);
      CHECK(each_once(o));
      last = o.end();
    }
    const double kernels = double(o.device_iterations) / 1e9, back = 0.4e-9 * double(o.device_iterations);
    MESSAGE(workers << " CPU workers: the call " << o.end() * 1e3 << " ms, " << o.device_chunks << " device chunks in "
                    << o.device_pieces << " pieces, " << lf.decisions());
    CHECK(o.device_pieces >= 3);
    CHECK(o.end() <= kernels + 0.5 * back);
  }
}

// Mandelbrot 4096² on one H200 (2026-11-28): the kernel 2.6 ms, its results 1.2 ms to bring back, 15
// CPU workers 100-1000x slower on the rows through the set, a few rows at the bottom cheap. LogFit
// gave the CPU nothing, call after call (4.0 ms, the device alone; the best static split 3.7-3.8):
// the CPU had run only rows through the middle, in the first call, and priced the bottom ones it
// never ran as the costliest it had seen. The probe a lone device's share leaves the CPU for that
// (a few rows at the tail) was rounded back into the device's chunk, and refused by the workers at
// those prices when it was not. With the probe run, the CPU learns the bottom rows call by call;
// with the device's share launched in pieces (each piece's results back under the next one's
// kernel), the cut for the transfer back and the CPU's rows go together, ahead of any static split.
TEST_CASE("on Mandelbrot's rows LogFit learns the cheap tail the CPU never ran, and launches its share in pieces") {
  const std::size_t n = 4096;
  Machine m;
  m.workers = 15;
  m.cpu_rate = 160;  // rows of the mean cost a second on one core: 1.7 s for the loop on 15
  m.cpu_chunk_cost = 20e-6;
  m.cost = mandelbrot_row_cost(n);
  m.devices = {SimDevice(filling(1.575e6, 256), 30e-6, 100e-6)};
  m.devices[0].back = 0.3e-6, m.devices[0].back_fixed = 20e-6;
  // The GPU's rows differ far less than one core's (on the H200 a half took 1.32-1.37 ms, 512 rows
  // through the middle 0.90, 64 rows 0.10): a row's cost there is half its mean and half its own.
  m.devices[0].kernel = [cost = m.cost](std::size_t begin, std::size_t size) {
    double work = 0;
    for (std::size_t i = begin; i < begin + size; ++i) work += 0.5 + 0.5 * cost(i);
    return 10e-6 + std::max(work, 256.0) / 1.575e6;
  };
  double best_static = 1e9, device_alone = 0;
  for (int percent = 70; percent <= 100; percent += 2) {
    StaticScheduler s(m.workers, 1, percent / 100.0);
    const double t = calls_of(s, m, n, 3).back().end();
    best_static = std::min(best_static, t);
    if (percent == 100) device_alone = t;
  }
  LogFitScheduler lf(m.workers);
  const std::vector<Outcome> calls = calls_of(lf, m, n, 16);
  for (std::size_t call = 8; call < calls.size(); ++call) {
    CAPTURE(call);
    CHECK(each_once(calls[call]));
    CHECK(calls[call].cpu_iterations > 0);
    CHECK(calls[call].device_pieces > calls[call].device_chunks);
    CHECK(calls[call].end() <= 0.95 * best_static);
  }
  // The tail the CPU is left to learn is sized to end in half the device's share's time, and its
  // workers end it together: split at the doubled prices of the bins the share newly reached, one
  // worker took the whole covered tail (the CPU's end 0.65 -> 3.16 ms over calls 1-7, past the
  // device's 3.06 at call 7; one H200, 8.9 ms where the other parts ended by 1.3).
  for (std::size_t call = 1; call < calls.size(); ++call) {
    CAPTURE(call);
    CHECK(calls[call].cpu_end <= 0.75 * calls[call].device_end);
  }
  MESSAGE("device alone " << device_alone * 1e3 << " ms, best static " << best_static * 1e3
                          << " ms, LogFit's last call " << calls.back().end() * 1e3 << " ms (CPU "
                          << calls.back().cpu_iterations << " rows in " << calls.back().cpu_chunks
                          << " chunks, the device's " << calls.back().device_chunks << " chunk(s) in "
                          << calls.back().device_pieces << " pieces); " << lf.decisions());
}

// A lone device (no CPU body, one device) takes every iteration whatever its speed: after the first
// call LogFit should hand it the same chunks call after call. A driver that builds a kernel for each
// new launch size (PoCL, 50 ms a size: tester 7's device-only loop took 135-170 ms every other call
// where one chunk takes 0.2) pays for every size it has not seen. Here a transfer back costs 5 us
// besides its 0.2 ns per iteration (the 64-iteration samples' per-iteration cost looked 400x the
// whole range's), and two calls run at half speed (a busy machine), which made LogFit explore again.
namespace {
struct ChunkSizes : LogFitScheduler {
  using LogFitScheduler::LogFitScheduler;
  std::vector<std::size_t> sizes;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override {
    const std::size_t chunk = LogFitScheduler::next_device(d, remaining, now);
    if (chunk > 0) sizes.push_back(std::min(chunk, remaining));
    return chunk;
  }
};
}  // namespace

TEST_CASE("a lone device settles: after its first call LogFit hands it the same chunks every call") {
  for (const std::size_t n : {60'000ul, 1'000'000ul}) {
    CAPTURE(n);
    Machine m;
    m.workers = 0;
    m.devices = {SimDevice(saturating(1e9, 4096), 20e-6, 50e-6)};
    m.devices[0].back = 0.2e-9;
    m.devices[0].back_fixed = 5e-6;
    ChunkSizes lf(0);
    double last = 0;
    std::vector<std::size_t> later;  // calls 2 on
    for (int call = 0; call < 12; ++call) {
      CAPTURE(call);
      m.devices[0].rate = saturating(call == 4 || call == 5 ? 0.5e9 : 1e9, 4096);
      lf.sizes.clear();
      const Outcome o = simulate(lf, m, n, last);
      CHECK(each_once(o));
      last = o.end();
      // Even exploring, no sliver is left over for a chunk of its own (a round trip more); once
      // planned, no tail under 1 % of the range either.
      CHECK(*std::min_element(lf.sizes.begin(), lf.sizes.end()) >= (call > 0 ? n / 100 : 64));
      if (call > 0) {
        CHECK(lf.phase() != LogFitScheduler::Phase::exploration);
        later.insert(later.end(), lf.sizes.begin(), lf.sizes.end());
      }
    }
    std::sort(later.begin(), later.end());
    const auto distinct = std::size_t(std::unique(later.begin(), later.end()) - later.begin());
    MESSAGE(n << " iterations: " << distinct << " chunk sizes over calls 2-12, " << lf.decisions());
    CHECK(distinct <= 2);
  }
}

// Beside the CPU the device's share moves by a few iterations every call with the CPU's measured
// speed, and each new size cost PoCL a kernel build (1M iterations with a CPU body, on the default
// device: every call 85 ms, of which the kernel 23). Its planned chunks are rounded to a grain of
// up to 4096 iterations, so a share that barely moved is the same size.
TEST_CASE("beside the CPU, a device's planned chunks keep their size while the share barely moves") {
  Machine m;
  m.workers = 4;
  m.devices = {SimDevice(saturating(4e7, 4096), 20e-6, 50e-6)};
  const std::size_t n = 4'000'000;
  ChunkSizes lf(m.workers);
  double last = 0;
  std::vector<std::size_t> later;
  for (int call = 0; call < 14; ++call) {
    m.cpu_rate = 1e6 * (1 + 0.01 * double(call % 3));  // the CPU's speed as measured, within 2 %
    lf.sizes.clear();
    const Outcome o = simulate(lf, m, n, last);
    CHECK(each_once(o));
    last = o.end();
    if (call >= 4) later.insert(later.end(), lf.sizes.begin(), lf.sizes.end());
  }
  std::sort(later.begin(), later.end());
  const auto distinct = std::size_t(std::unique(later.begin(), later.end()) - later.begin());
  MESSAGE(distinct << " device chunk sizes over calls 5-14, " << lf.decisions());
  CHECK(distinct <= 3);
}

// A device's first chunk may take seconds before anything is known of it (PoCL building the kernel
// with a cold cache: tester 8's loop of 1M iterations on the default device). The CPU, measured
// meanwhile, kept to probes of 64 iterations until a device's rate was known: 15,599 CPU chunks in
// that call, each paying a hook's submission. A device that has said nothing for `now` seconds takes
// at least that long, so a CPU chunk may last a tenth of it: chunks grow with the wait.
TEST_CASE("while a device's first chunk is slow to come back, the CPU's chunks grow with the wait") {
  for (unsigned workers : {1u, 4u}) {
    CAPTURE(workers);
    Machine m;
    m.workers = workers;
    m.cpu_rate = 2e7;
    m.cpu_chunk_cost = 30e-6;
    m.devices = {SimDevice(saturating(4e8, 4096), 20e-6, 50e-6)};
    auto chunks = std::make_shared<int>(0);
    m.devices[0].late = [chunks] { return ++*chunks == 1 ? 2.0 : 0.0; };  // the first notice 2 s late
    const std::size_t n = 1'000'000;
    LogFitScheduler lf(m.workers, 1);
    double last = 0;
    for (int call = 0; call < 4; ++call) {
      CAPTURE(call);
      const Outcome o = simulate(lf, m, n, last);
      CHECK(each_once(o));
      last = o.end();
      if (call == 0) {
        MESSAGE(workers << " workers, the first call: " << o.cpu_chunks << " CPU chunks, " << o.cpu_iterations
                        << " iterations on the CPU, ended at " << o.end() << " s");
        CHECK(o.cpu_chunks <= 100 * workers);  // 64 iterations each before: 15,600
        CHECK(o.cpu_end <= 0.1);               // its work is 0.05 s on one worker; 0.52 with its chunks' cost before
      } else {
        CHECK(o.end() <= 1.1 * double(n) / (4e8 + workers * 2e7) + 1e-3);
      }
    }
  }
}

TEST_CASE("LogFit explores again when the device's behaviour changes") {
  Machine m;
  m.workers = 8;
  LogFitScheduler lf(m.workers);
  const std::size_t n = 20'000'000;
  simulate(lf, m, n);
  simulate(lf, m, n);
  REQUIRE(lf.phase() != LogFitScheduler::Phase::exploration);
  const std::size_t before = lf.stable_chunk();
  // The device slows down fourfold and saturates only at 16x larger chunks.
  m.devices[0] = saturating(1e7, 65536);
  for (int call = 0; call < 4; ++call) {
    const Outcome o = simulate(lf, m, n);
    CHECK(each_once(o));
  }
  CHECK(lf.phase() != LogFitScheduler::Phase::exploration);
  CHECK(lf.stable_chunk() > before);
}

TEST_CASE("HGuided, with each side's power measured online, ends both sides close together") {
  Machine m;
  m.workers = 16;
  HGuidedScheduler hg(m.workers);
  const std::size_t n = 50'000'000;
  simulate(hg, m, n);
  const Outcome o = simulate(hg, m, n);
  CHECK(each_once(o));
  const double efficiency = ideal_seconds(m, n) / o.end();
  MESSAGE("HGuided efficiency on the simulated machine: " << efficiency);
  CHECK(efficiency >= 0.85);
  CHECK(std::abs(o.cpu_end - o.device_end) <= 0.1 * o.end());
}

TEST_CASE("the oracle tries static shares call by call and keeps the fastest") {
  Machine m;  // 4 workers at 1e6/s, a device saturating at 4e7/s: the best share is near 0.91
  OracleScheduler oracle(m.workers);
  const std::size_t n = 20'000'000;
  double last = 0;
  int calls = 0;
  while (oracle.searching() && calls < 40) {
    last = simulate(oracle, m, n, last).end(), ++calls;
    CHECK(oracle.name().find("(searching)") != std::string::npos);  // a report says when a call was a trial
  }
  last = simulate(oracle, m, n, last).end();  // reports the last candidate's time
  CHECK_FALSE(oracle.searching());
  CHECK(calls <= 11 + 8);
  MESSAGE("oracle: best device share " << oracle.best_share() << " after " << calls << " calls");
  CHECK(std::abs(oracle.best_share() - 40.0 / 44.0) <= 0.05);
  const Outcome settled = simulate(oracle, m, n, last);
  CHECK(each_once(settled));
  CHECK(oracle.name().find("(the best of") != std::string::npos);
}

TEST_CASE(
    "with two devices LogFit and HGuided use both: near twice one device's throughput, unequal devices balanced") {
  const std::size_t n = 50'000'000;
  for (const char* which : {"logfit", "hguided"}) {
    const std::string name = which;
    CAPTURE(name);
    auto make = [&](unsigned devices) -> std::unique_ptr<LoopScheduler> {
      if (std::string(which) == "logfit") return std::make_unique<LogFitScheduler>(2, devices);
      return std::make_unique<HGuidedScheduler>(2, devices);
    };
    Machine one, two, unequal;
    one.workers = two.workers = unequal.workers = 2;  // a weak CPU: the devices carry the loop
    two.devices.assign(2, saturating(4e7, 4096));
    unequal.devices = {saturating(4e7, 4096), saturating(1e7, 16384)};
    auto s1 = make(1), s2 = make(2), s3 = make(2);
    simulate(*s1, one, n), simulate(*s2, two, n), simulate(*s3, unequal, n);
    const Outcome a = simulate(*s1, one, n), b = simulate(*s2, two, n), c = simulate(*s3, unequal, n);
    CHECK(each_once(b));
    CHECK(each_once(c));
    MESSAGE(name << ": two devices " << a.end() / b.end() << "x one device; unequal pair at "
                 << ideal_seconds(unequal, n) / c.end() << " of the ideal, split " << c.per_device[0] << " / "
                 << c.per_device[1]);
    CHECK(a.end() / b.end() >= 1.8);
    CHECK(ideal_seconds(unequal, n) / c.end() >= 0.85);
    CHECK(c.per_device[0] > 2 * c.per_device[1]);  // the faster device did more
  }
}

namespace {

// Machines shaped like the NVIDIA H200 host's measurements (perf/RESULTS.md, "The heterogeneous
// loop"): 15 CPU workers; a device whose kernel over fewer than `fill` iterations takes as long as
// one over `fill` (a thread's own latency bounds it: N-body's 32K threads never fill the GPU, for
// Barnes-Hut and SpMV the elbow is a guess, not measured); and `fixed` seconds per device chunk
// outside its kernel, a quarter launch, three quarters late notice (NVIDIA's callbacks, the poller),
// measured there at 0.2-1 ms. The whole loop takes `cpu_seconds` on the CPU alone and
// `device_seconds` on the device alone, in one chunk, fixed cost included.
struct Profile {
  std::string name;
  std::size_t n;
  Machine machine;
};

Profile h200_like(std::string name, std::size_t n, double cpu_seconds, double device_seconds, std::size_t fill,
                  double fixed, unsigned slots = 1) {
  constexpr double kernel_start = 5e-6;  // inside the profiled time
  const double peak = double(std::max(n, fill)) / (device_seconds - fixed - kernel_start);
  Profile p{std::move(name), n, {}};
  p.machine.workers = 15;
  p.machine.cpu_rate = double(n) / (cpu_seconds * 15);
  p.machine.cpu_chunk_cost = 5e-6;
  p.machine.device_slots = slots;
  p.machine.devices = {SimDevice(filling(peak, fill, kernel_start), 0.25 * fixed, 0.75 * fixed)};
  return p;
}

std::vector<Profile> h200_profiles() {
  std::vector<Profile> v;
  for (double fixed : {0.3e-3, 1e-3}) {
    const std::string ms = fixed < 0.5e-3 ? ", 0.3 ms/chunk" : ", 1 ms/chunk";
    v.push_back(h200_like("Barnes-Hut 1M (device 120x)" + ms, 1'000'000, 2.3, 0.019, 65'536, fixed));
    v.push_back(h200_like("SpMV 2^22 (device 2x)" + ms, std::size_t(1) << 22, 0.04, 0.019, 262'144, fixed));
    v.push_back(h200_like("N-body 32K (device 350x)" + ms, 32'768, 0.45, 0.0013, 1 << 20, fixed));
  }
  // The elbow is a guess: a device that fills only at 256K iterations, a quarter of the loop.
  v.push_back(h200_like("Barnes-Hut 1M, elbow 256K, 1 ms/chunk", 1'000'000, 2.3, 0.019, 262'144, 1e-3));
  v.push_back(h200_like("Barnes-Hut 1M, 1 ms/chunk, 2 device slots", 1'000'000, 2.3, 0.019, 65'536, 1e-3, 2));
  v.push_back(h200_like("SpMV 2^22, 1 ms/chunk, 2 device slots", std::size_t(1) << 22, 0.04, 0.019, 262'144, 1e-3, 2));
  return v;
}

// The loop called `calls` times (time steps), the scheduler kept: each call's makespan.
std::vector<double> makespans(LoopScheduler& s, const Machine& m, std::size_t n, int calls) {
  std::vector<double> t;
  for (const Outcome& o : calls_of(s, m, n, calls)) {
    REQUIRE(each_once(o));
    t.push_back(o.end());
  }
  return t;
}

double static_split(const Machine& m, std::size_t n, double share) {
  StaticScheduler s(m.workers, {share});
  return simulate(s, m, n).end();
}

}  // namespace

TEST_CASE("on H200-like machines LogFit loses no time against the device alone and reaches the issue's targets") {
  // Issue 15: never more than 3 % slower than the device alone, efficiency 1 / (1/T_cpu + 1/T_device)
  // / T of at least 0.93 on average, within 5 % of the best static split on regular loops. The first
  // two calls may explore; the targets hold from the third call on.
  constexpr int calls = 10, learning = 2;
  for (const Profile& p : h200_profiles()) {
    CAPTURE(p.name);
    const double t_device = static_split(p.machine, p.n, 1.0), t_cpu = static_split(p.machine, p.n, 0.0);
    const double ideal = 1 / (1 / t_cpu + 1 / t_device);
    double best_static = t_device;
    for (int i = 0; i <= 200; ++i) best_static = std::min(best_static, static_split(p.machine, p.n, i / 200.0));
    LogFitScheduler lf(p.machine.workers);
    HGuidedScheduler hg(p.machine.workers);
    const std::vector<double> t = makespans(lf, p.machine, p.n, calls);
    const std::vector<double> h = makespans(hg, p.machine, p.n, calls);
    double efficiency = 0, worst = 0, hg_worst = 0;
    for (int call = learning; call < calls; ++call) {
      efficiency += ideal / t[call] / (calls - learning);
      worst = std::max(worst, t[call]);
      hg_worst = std::max(hg_worst, h[call]);
    }
    MESSAGE(p.name << ": device alone " << t_device * 1e3 << " ms, CPU alone " << t_cpu * 1e3 << " ms, ideal "
                   << ideal * 1e3 << " ms, best static " << best_static * 1e3 << " ms; LogFit calls 1-2 " << t[0] * 1e3
                   << ", " << t[1] * 1e3 << " ms, then worst " << worst * 1e3 << " ms (x" << worst / t_device
                   << " the device alone), mean efficiency " << efficiency << "; HGuided worst " << hg_worst * 1e3
                   << " ms");
    CHECK(worst <= 1.03 * t_device);
    CHECK(efficiency >= 0.93);
    CHECK(worst <= 1.05 * best_static);
  }
}

TEST_CASE("the CPU's cost is learned by where in the range it was paid") {
  // Iterations [0, 5000) cost 1 us each, [5000, 10000) 10 us (Barnes-Hut's regions differ tenfold).
  CpuCostProfile p;
  p.restart(10'000);
  CHECK_FALSE(p.measured());
  CHECK(p.seconds(0, 100) == 0);
  CHECK(p.within(0, 1.0, 100) == 0);
  for (std::size_t b = 0; b < 10'000; b += 500) p.record(b, 500, 500 * (b < 5000 ? 1e-6 : 10e-6));
  REQUIRE(p.measured());
  CHECK(p.seconds(0, 1000) == doctest::Approx(1e-3).epsilon(0.02));
  CHECK(p.seconds(8000, 1000) == doctest::Approx(10e-3).epsilon(0.02));
  CHECK(p.seconds(4500, 1000) == doctest::Approx(5.5e-3).epsilon(0.05));
  CHECK(p.rate(9000, 1000) == doctest::Approx(1e5).epsilon(0.02));
  // within() is seconds()'s inverse from a place: 2 ms buys ~2000 cheap iterations, ~200 costly.
  CHECK(p.within(0, 2e-3, 10'000) == doctest::Approx(2000).epsilon(0.05));
  CHECK(p.within(7000, 2e-3, 3000) == doctest::Approx(200).epsilon(0.03));
  CHECK(p.within(7000, 1.0, 3000) == 3000);  // capped
  // A later call where only the cheap half was run again: the costly half is still remembered,
  // and older calls weigh half each time, so a changed cost takes over.
  for (int call = 0; call < 6; ++call) {
    p.restart(10'000);
    p.record(0, 5000, 5000 * 3e-6);
  }
  CHECK(p.seconds(0, 1000) == doctest::Approx(3e-3).epsilon(0.05));
  CHECK(p.seconds(8000, 1000) == doctest::Approx(10e-3).epsilon(0.05));
  // However many calls pass without it: it is not run, so nothing says it changed (halved at
  // every call, after 12 its price leaned on the mean of what ran since: ~4x too cheap).
  for (int call = 0; call < 12; ++call) {
    p.restart(10'000);
    p.record(0, 5000, 5000 * 3e-6);
  }
  CHECK(p.seconds(8000, 1000) == doctest::Approx(10e-3).epsilon(0.05));
  // A range never run costs the mean of everything measured.
  CpuCostProfile q;
  q.restart(1'000'000);
  q.record(0, 1000, 2e-3);
  CHECK(q.seconds(900'000, 1000) == doctest::Approx(2e-3).epsilon(0.01));
}

// Its bins' edges were i * 256 / n and b * n / 256 in a size_t: from n = 2^56 they wrapped, and
// record() never got past a bin whose next edge fell below it (a CPU loop of 2^56 iterations hung).
TEST_CASE("the CPU's cost profile works over ranges up to the largest size_t") {
  for (std::size_t n : {std::size_t(1) << 56, std::size_t(1) << 63, SIZE_MAX}) {
    CAPTURE(n);
    CpuCostProfile p;
    p.restart(n);
    p.record(0, n / 2, 1.0);
    p.record(n / 2, n - n / 2, 3.0);
    REQUIRE(p.measured());
    CHECK(p.covered_tail() == n);
    CHECK(p.seconds(0, n / 4) == doctest::Approx(0.5).epsilon(0.02));
    CHECK(p.seconds(n - n / 4, n / 4) == doctest::Approx(1.5).epsilon(0.02));
    CHECK(double(p.within(0, 0.5, n)) == doctest::Approx(double(n / 4)).epsilon(0.02));
    CHECK(double(p.within_tail(1.5, n)) == doctest::Approx(double(n / 4)).epsilon(0.02));
  }
}

TEST_CASE("a bin the CPU never ran is priced from the one after it, doubled per bin, or as the costliest") {
  // 256 bins of 100 iterations. Known: the front bin at 100 us an iteration, the last two at 1 us.
  CpuCostProfile guessing, cautious(false);
  for (CpuCostProfile* p : {&guessing, &cautious}) {
    p->restart(25'600);
    p->record(0, 100, 100 * 100e-6);
    CHECK(p->covered_tail() == 0);
    p->record(25'400, 200, 200 * 1e-6);
    CHECK(p->covered_tail() == 200);
    CHECK(p->seconds(25'500, 100) == doctest::Approx(100e-6).epsilon(0.1));  // known: its own
  }
  // The bin before the known tail: ~2 us guessing, 100 us (the costliest) otherwise; the one before
  // it ~4 us; far from it, never above the costliest.
  CHECK(guessing.seconds(25'300, 100) == doctest::Approx(216e-6).epsilon(0.05));
  CHECK(guessing.seconds(25'200, 100) == doctest::Approx(432e-6).epsilon(0.05));
  CHECK(guessing.seconds(10'000, 100) == doctest::Approx(10e-3).epsilon(0.05));
  CHECK(cautious.seconds(25'300, 100) == doctest::Approx(10e-3).epsilon(0.05));
  // The tail the workers end together within a time (a known bin leans a little on the mean: 1.08
  // us): 216 us buys the known 200 iterations, 430 us ~100 more at ~2.2 us; cautious, 10 ms buys the
  // known ones and ~98 at 100 us.
  CHECK(guessing.within_tail(216e-6, 25'600) == doctest::Approx(200).epsilon(0.03));
  CHECK(guessing.within_tail(430e-6, 25'600) == doctest::Approx(300).epsilon(0.03));
  CHECK(guessing.within_tail(430e-6, 250) == 250);  // capped
  CHECK(cautious.within_tail(10e-3, 25'600) == doctest::Approx(298).epsilon(0.03));
  CHECK(cautious.within_tail(0, 25'600) == 0);
  // Priced as likely, for an even split, those bins cost what the known one after them does.
  constexpr auto likely = CpuCostProfile::Pricing::likely;
  CHECK(guessing.seconds(25'300, 100, likely) == doctest::Approx(108e-6).epsilon(0.05));
  CHECK(guessing.seconds(25'200, 100, likely) == doctest::Approx(108e-6).epsilon(0.05));
  CHECK(guessing.within(25'200, 216e-6, 400, likely) == doctest::Approx(200).epsilon(0.03));
  CHECK(cautious.seconds(25'300, 100, likely) == doctest::Approx(10e-3).epsilon(0.05));  // no guess: the costliest
}

TEST_CASE("a scheduler spec is plain decimal, refused whole when out of range, and has no blank anywhere") {
  using hetflow::UsageError;
  CHECK(make_loop_scheduler("dynamic:18446744073709551615", 1)->name() == "dynamic(18446744073709551615)");
  CHECK(make_loop_scheduler("dynamic:0064", 1)->name() == "dynamic(64)");
  CHECK(make_loop_scheduler("static:.5", 1)->name() == make_loop_scheduler("static:0.5", 1)->name());
  CHECK(make_loop_scheduler("static:1.", 1)->name() == make_loop_scheduler("static:1", 1)->name());
  CHECK(make_loop_scheduler("static:0.25,0.5", 1, 2) != nullptr);
  struct Case {
    const char* spec;
    const char* said;
  };
  // Each was accepted before: the overflows clamped to 9223372036854775807, strtoll and strtod
  // skipping a leading blank (not a trailing one) and reading a sign, hex and exponents.
  for (const Case& c : {
           Case{"dynamic:99999999999999999999999",
                "loop scheduler 'dynamic:99999999999999999999999': the chunk 99999999999999999999999 is out of range: "
                "it "
                "must be from 1 to 18446744073709551615"},
           Case{"dynamic:18446744073709551616", "the chunk 18446744073709551616 is out of range"},
           Case{"dynamic:0", "the chunk must be a positive whole number, not 0"},
           Case{"dynamic:+5", "the chunk '+5' must be a positive whole number in plain decimal digits"},
           Case{"dynamic:-5", "the chunk '-5' must be"},
           Case{"dynamic:0x10", "the chunk '0x10' must be"},
           Case{"dynamic:5.0", "the chunk '5.0' must be"},
           Case{"dynamic: 5", "loop scheduler 'dynamic: 5': it has a blank in it"},
           Case{"dynamic:5 ", "loop scheduler 'dynamic:5 ': it has a blank in it"},
           Case{" logfit", "it has a blank in it"},
           Case{"static:0.5,\t0.5", "it has a blank in it"},
           Case{"static:0x0.8", "share '0x0.8' must be a number from 0 to 1 in plain decimal"},
           Case{"static:5e-1", "share '5e-1' must be"},
           Case{"static:+0.5", "share '+0.5' must be"},
           Case{"static:-0", "share '-0' must be"},
           Case{"static:nan", "share 'nan' must be"},
           Case{"static:.", "share '.' must be"},
           Case{"static:1.5", "share '1.5' must be a number from 0 to 1"},
       }) {
    CAPTURE(c.spec);
    CHECK_THROWS_WITH_AS(make_loop_scheduler(c.spec, 1, 2), doctest::Contains(c.said), UsageError);
  }
}

TEST_CASE("a device's price for a CPU chunk's tail: its largest chunk's rate, no less than its least kernel") {
  DeviceTailPrice price;
  CHECK_FALSE(price.known());
  CHECK(price.seconds(60, 200e-6) == 0);
  // N-body 32K's first call on one H200: 64 bodies in 0.217 ms, then LogFit's 1-body leftover in
  // 0.204 ms. Priced at the latest chunk's rate, 60 bodies took 12 ms and the CPU kept its tail.
  price.record(64, 0.217e-3, 0.5e-3);
  price.record(1, 0.204e-3, 0.4e-3);
  REQUIRE(price.known());
  // 60 bodies at 64 bodies' rate (0.203 ms) fall below the least kernel seen (0.204 ms): the floor.
  CHECK(price.seconds(60, 0) == doctest::Approx(0.204e-3 + 0.196e-3));
  CHECK(price.seconds(60, 200e-6) == doctest::Approx(0.204e-3 + 0.2e-3));
  CHECK(price.seconds(640, 0) == doctest::Approx(2.17e-3 + 0.196e-3));
  // A larger chunk sets the rate; what it spent beside its kernels is the latest chunk's.
  price.record(4096, 2.048e-3, 2.148e-3);
  CHECK(price.seconds(8192, 0) == doctest::Approx(4.096e-3 + 0.1e-3));
  CHECK(price.seconds(1, 0) == doctest::Approx(0.204e-3 + 0.1e-3));
  // Chunks without a kernel time teach nothing.
  price.record(100'000, 0, 1.0);
  price.record(0, 1.0, 1.0);
  CHECK(price.seconds(8192, 0) == doctest::Approx(4.096e-3 + 0.1e-3));
}
