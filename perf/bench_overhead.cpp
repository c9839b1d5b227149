// perf/overhead: what hetflow adds per request over calling clEnqueue* directly, for empty
// kernels and 4-byte transfers, on the default device (HETFLOW_DEVICE picks another).
//   bench_overhead [requests-per-run=20000] [runs=7]
// Each run times native and hetflow back to back (interleaved), so machine noise hits both;
// the table shows medians. "native" is hand-written OpenCL without profiling (the fastest such a
// program gets), against hetflow's default (no profiling); "native prof." has
// CL_QUEUE_PROFILING_ENABLE on its queues, against hetflow recording (which profiles, for the
// times in dumps and traces). The blocking rows: the sync policy's 4-byte transfers against
// blocking clEnqueue calls, and a launch followed by wait() against clEnqueueNDRangeKernel +
// clWaitForEvents (the interactive round trip).
// Two more pipelined rows run every engine step on TBB workers (HETFLOW_DEBUG_STEPS_ON_WORKERS=1),
// the engine's other path, for comparison in the same run.
// Last, where a blocking request's time goes: the same two patterns recorded (profiling off), both
// with the engine's steps run by the submitting thread (the default) and by the flow graph's
// workers (HETFLOW_DEBUG_STEPS_ON_WORKERS=1), split by the records' host times into submit →
// enqueued (dispatcher and streaming steps, the enqueue call itself), enqueued → waiter released
// (device, completion seen) and released → next submit (the caller waking and returning).
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <tuple>
#include <vector>
#include "bench_timing.hpp"
#include "native/raw_requests.hpp"

using namespace hetflow;

namespace {

using bench::median;
using bench::seconds_of;

struct Hetflow {
  explicit Hetflow(bool record, Policy policy = Policy::async) : Hetflow(options(record, policy)) {}
  explicit Hetflow(const ControllerOptions& o)
      : c(o), k(c.kernel("hetflow_test.cl", "empty_kernel")), x(c.tile<float>(1, "x")) {
    x[0] = 1.0f;
  }
  static ControllerOptions options(bool record, Policy policy) {
    ControllerOptions o;
    o.policy = policy;
    o.kernel_queues = 1;
    o.record = record;
    return o;
  }
  void kernels(int n) {
    for (int i = 0; i < n; ++i) c.launch(k, Range(1), io(x));
    c.wait_all();
  }
  void transfers(int n) {
    for (int i = 0; i < n; ++i) {
      if (i % 2 == 0)
        c.move_to(x);
      else
        c.move_from(x);
    }
    c.wait_all();
  }
  void round_trips(int n) {
    for (int i = 0; i < n; ++i) {
      c.launch(k, Range(1), io(x));
      c.wait(x);
    }
  }
  Controller c;
  Kernel k;
  Tile<float> x;
};

// Medians, in µs, of the stages of `n` blocking requests (see the top of this file).
struct Stages {
  double to_enqueued = 0, to_released = 0, to_next = 0, total = 0;
};

Stages blocking_stages(bool on_workers, bool round_trip, int n) {
  if (on_workers) setenv("HETFLOW_DEBUG_STEPS_ON_WORKERS", "1", 1);
  ControllerOptions o = Hetflow::options(true, round_trip ? Policy::async : Policy::sync);
  o.profiling = false;
  Hetflow h(o);
  unsetenv("HETFLOW_DEBUG_STEPS_ON_WORKERS");
  if (round_trip)
    h.round_trips(n);
  else
    h.transfers(n);
  const auto records = h.c.records();
  std::vector<double> a, b, c, t;
  // Each device request is followed by its wait (sync's implicit one, or wait(x)).
  for (std::size_t i = 0; i + 2 < records.size(); ++i) {
    const auto &d = records[i], &w = records[i + 1], &next = records[i + 2];
    if (d.kind == "wait" || w.kind != "wait" || next.kind == "wait" || d.enqueue_ns < 0) continue;
    a.push_back(double(d.enqueue_ns - d.submit_ns) / 1e3);
    b.push_back(double(w.end_ns - d.enqueue_ns) / 1e3);
    c.push_back(double(next.submit_ns - w.end_ns) / 1e3);
    t.push_back(double(next.submit_ns - d.submit_ns) / 1e3);
  }
  if (t.empty()) return {};
  return {median(a), median(b), median(c), median(t)};
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 7;
  if (n < 10 || runs < 1) {
    std::fprintf(stderr, "usage: bench_overhead [requests-per-run >= 10] [runs >= 1]\n");
    return 2;
  }
  const auto device = select_device();
  std::printf("perf/overhead on %s (%s), %d requests per run, median of %d runs\n", device.device.name.c_str(),
              device.device.platform_name.c_str(), n, runs);
  native::RawRequests native(device.device, false), profiled(device.device, true);
  // Per row: native, hetflow, native with profiling, hetflow recording.
  std::vector<double> kern[4], xfer[4], sync[2], trip[2], kern_workers, xfer_workers;
  const int blocking_n = std::max(1, n / 10);  // blocking requests are slower; fewer keep runs short
  for (int r = 0; r < runs + 1; ++r) {
    // A fresh controller per run keeps recording's history from growing across runs.
    Hetflow plain(false), recorded(true), synced(false, Policy::sync);
    setenv("HETFLOW_DEBUG_STEPS_ON_WORKERS", "1", 1);  // the pipelined rows again, every step on TBB workers
    Hetflow on_workers(false);
    unsetenv("HETFLOW_DEBUG_STEPS_ON_WORKERS");
    const double times[] = {
        seconds_of([&] { native.kernels(n); }),
        seconds_of([&] { plain.kernels(n); }),
        seconds_of([&] { profiled.kernels(n); }),
        seconds_of([&] { recorded.kernels(n); }),
        seconds_of([&] { native.transfers(n); }),
        seconds_of([&] { plain.transfers(n); }),
        seconds_of([&] { profiled.transfers(n); }),
        seconds_of([&] { recorded.transfers(n); }),
        seconds_of([&] { native.blocking_transfers(blocking_n); }),
        seconds_of([&] { synced.transfers(blocking_n); }),
        seconds_of([&] { native.round_trips(blocking_n); }),
        seconds_of([&] { plain.round_trips(blocking_n); }),
        seconds_of([&] { on_workers.kernels(n); }),
        seconds_of([&] { on_workers.transfers(n); }),
    };
    if (r == 0) continue;  // warm-up: program builds, first allocations, thread start-up
    for (int i = 0; i < 4; ++i) kern[i].push_back(times[i]), xfer[i].push_back(times[4 + i]);
    for (int i = 0; i < 2; ++i) sync[i].push_back(times[8 + i]), trip[i].push_back(times[10 + i]);
    kern_workers.push_back(times[12]), xfer_workers.push_back(times[13]);
  }
  auto us = [&](const std::vector<double>& v) { return median(v) / n * 1e6; };
  auto us_blocking = [&](const std::vector<double>& v) { return median(v) / blocking_n * 1e6; };
  std::printf("\n%-26s %10s %10s %8s %13s %13s %8s\n", "request", "native us", "hetflow us", "added", "native prof.",
              "hf recording", "added");
  for (auto [name, v] : {std::pair{"empty kernel", kern}, std::pair{"4-byte H2D/D2H", xfer}})
    std::printf("%-26s %10.2f %10.2f %8.2f %13.2f %13.2f %8.2f\n", name, us(v[0]), us(v[1]), us(v[1]) - us(v[0]),
                us(v[2]), us(v[3]), us(v[3]) - us(v[2]));
  // The engine's two paths for the same pipelined requests (docs/architecture.md, "The flow of a
  // request"): the submitting thread runs the steps while the nodes are idle (the rows above), or
  // TBB workers do, overlapping them with the next submission.
  for (auto [name, v, w] : {std::tuple{"empty kernel, on workers", kern, &kern_workers},
                            std::tuple{"4-byte xfer, on workers", xfer, &xfer_workers}})
    std::printf("%-26s %10.2f %10.2f %8.2f %13s %13s %8s\n", name, us(v[0]), us(*w), us(*w) - us(v[0]), "-", "-", "-");
  for (auto [name, v] : {std::pair{"sync: blocking 4-byte xfer", sync}, std::pair{"launch + wait round trip", trip}})
    std::printf("%-26s %10.2f %10.2f %8.2f %13s %13s %8s\n", name, us_blocking(v[0]), us_blocking(v[1]),
                us_blocking(v[1]) - us_blocking(v[0]), "-", "-", "-");
  std::printf(
      "\nwhere a blocking request's time goes (median µs per request, %d requests, recorded without profiling)\n",
      blocking_n);
  std::printf("%-26s %-18s %10s %10s %10s %8s\n", "request", "engine steps on", "->enqueued", "->released", "->next",
              "total");
  for (bool round_trip : {false, true}) {
    blocking_stages(false, round_trip, blocking_n);  // warm-up
    for (bool on_workers : {false, true}) {
      const Stages s = blocking_stages(on_workers, round_trip, blocking_n);
      std::printf("%-26s %-18s %10.2f %10.2f %10.2f %8.2f\n",
                  round_trip ? "launch + wait round trip" : "sync: blocking 4-byte xfer",
                  on_workers ? "TBB workers" : "submitting thread", s.to_enqueued, s.to_released, s.to_next, s.total);
    }
  }
  return 0;
}
