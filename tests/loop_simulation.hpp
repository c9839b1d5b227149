#pragma once
// A simulated machine for the loop schedulers (src/loop_schedulers.hpp): no OpenCL, a clock of its
// own, a CPU of `workers` workers at a fixed rate and devices whose throughput depends on the chunk
// (a curve with an elbow: small chunks leave a device idle) and that pay a fixed cost per chunk
// outside their kernels. It is the selector of DESIGN.md §7 as LoopState (src/hetero_loop.cpp) runs
// it: each free CPU worker or device token asks the scheduler for a chunk of what is left, runs it,
// reports its time (a device chunk: its kernel's time as profiling counts it, and the host's round
// trip), drops its token when given nothing, and the last token standing takes whatever is left.
// A device chunk pays a launch before its kernel and a late notice of its end after it (the H200's
// 0.2-1 ms, perf/RESULTS.md), during which its token waits; with several slots a device's next chunk
// is queued behind the one running, so its kernel follows at once. An irregular loop's iterations
// cost more in some parts of the range than in others (Machine::cost), on every side alike.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <queue>
#include <vector>

#include "loop_schedulers.hpp"

namespace hetflow::sim {

using Rate = std::function<double(std::size_t)>;  // iterations per second for a chunk of that size

// Throughput that grows with the chunk and saturates at `peak`, half of it at `half` iterations.
inline Rate saturating(double peak, double half) {
  return [peak, half](std::size_t c) { return peak * double(c) / (double(c) + half); };
}

// A device whose kernel over fewer than `fill` iterations takes as long as one over `fill` (a hard
// elbow: a thread's latency bounds a chunk that does not fill it), plus `start` seconds per kernel.
inline Rate filling(double peak, std::size_t fill, double start = 5e-6) {
  return [peak, fill, start](std::size_t c) { return double(c) / (start + double(std::max(c, fill)) / peak); };
}

struct SimDevice {
  SimDevice(Rate r, double launch_seconds = 0, double notice_seconds = 0,  // NOLINT: a Rate is a device
            double first_copy_seconds = 0)
      : rate(std::move(r)), launch(launch_seconds), notice(notice_seconds), first_copy(first_copy_seconds) {}
  Rate rate;          // of its kernels, as profiling counters time them
  double launch = 0;  // from submission to the kernel's start, when the device is free
  double notice = 0;  // from the kernel's end to the host's notice of it (the hook)
  // The loop's reads, copied with the device's first chunk of each call (LoopState::next_device on
  // a further device): its first kernel starts that much after its submission.
  double first_copy = 0;
  // Seconds added to a chunk's notice, asked once per chunk (a test counts them): a notice that
  // waited for a core (perf/RESULTS.md, "the notices wait for a core": 4-23 ms on the two-GPU host).
  std::function<double()> late;
  // When set, a chunk's kernel time from where it lies, not from `rate` and the mean cost: a
  // kernel giving each iteration a work-item lasts at least as long as its costliest iteration.
  std::function<double(std::size_t begin, std::size_t size)> kernel;
  // Seconds per iteration to bring a chunk's results back once its kernel has ended, one chunk after
  // another (a D2H queue), while its token goes on (LoopState::next_device): the call ends when the
  // last chunk is back. Reported to the scheduler as LoopState does (record_transfer_back).
  double back = 0;
  double back_fixed = 0;  // seconds each transfer back costs besides (a copy's start), where back > 0
};

struct Machine {
  unsigned workers = 4;       // CPU tokens; 0: a loop without a CPU body
  double cpu_rate = 1e6;      // per worker
  double cpu_chunk_cost = 0;  // per CPU chunk (a hook's submission and run), not in its timed part
  unsigned device_slots = 1;  // chunks in flight per device (LoopOptions::device_slots)
  std::vector<SimDevice> devices{saturating(4e7, 4096)};
  // Iteration i costs cost(i) times the mean (empty: all alike); a chunk's time on any side is
  // scaled by its iterations' mean cost.
  std::function<double(std::size_t)> cost;
};

// Barnes-Hut's per-body cost in tree order on one core, 256-body samples at 40 places across 1M
// bodies (perf/RESULTS.md, 2026-11-25: 4.9 to 47.6 us), linear between them, as multiples of their
// mean; `reversed` runs it from the other end.
inline std::function<double(std::size_t)> barnes_hut_cost(std::size_t n, bool reversed = false) {
  static const double us[] = {4.9,  27.9, 40.9, 22.1, 14.4, 19.7, 44.6, 44.5, 18.5, 21.5, 26.5, 14.7, 18.9, 26.2,
                              30.5, 20.5, 10.1, 23.6, 19.8, 17.0, 23.7, 31.2, 34.3, 41.7, 31.7, 47.6, 42.2, 26.7,
                              38.6, 36.8, 18.3, 16.1, 34.4, 39.7, 35.9, 44.0, 20.9, 20.3, 21.1, 18.0};
  constexpr std::size_t k = sizeof(us) / sizeof(us[0]);
  double mean = 0;
  for (double u : us) mean += u / k;
  return [n, reversed, mean](std::size_t i) {
    const double x = double(reversed ? n - 1 - i : i) / double(n) * double(k - 1);
    const std::size_t j = std::min(k - 2, std::size_t(x));
    return (us[j] + (x - double(j)) * (us[j + 1] - us[j])) / mean;
  };
}

// CSR SpMV over an R-MAT matrix of 2^scale rows (tools/workloads/spmv_loop.hpp, Graph500's a+b =
// 0.76 for a row bit of 0): row r's expected non-zeros, as a multiple of the mean, are
// 1.52^(zero bits) * 0.48^(one bits) — row 0 about 10,000 times the mean at scale 22, where the
// range's front holds most of the work.
inline double rmat_row_cost(std::size_t r, unsigned scale) {
  const int ones = __builtin_popcountll(static_cast<unsigned long long>(r));
  return std::pow(1.52, double(int(scale) - ones)) * std::pow(0.48, double(ones));
}

// The fewest one bits of any integer in [lo, hi]: walking lo -> lo + its lowest set bit visits it.
inline int fewest_ones(std::size_t lo, std::size_t hi) {
  int best = __builtin_popcountll(static_cast<unsigned long long>(lo));
  for (std::size_t v = lo; v != 0;) {
    const std::size_t next = v + (v & (~v + 1));
    if (next > hi || next <= v) break;
    v = next;
    best = std::min(best, __builtin_popcountll(static_cast<unsigned long long>(v)));
  }
  return best;
}

// A GPU's SpMV kernel over rows [begin, begin + size) of that matrix, a row per work-item: the
// rows' work at `peak` mean rows a second, but never less than its heaviest row alone, which
// takes `row0_seconds` for row 0 (7.8 ms on an H200 at scale 22, perf/RESULTS.md 2026-11-25
// 23:53Z, whatever the chunk's size) and less by its cost for the others.
inline std::function<double(std::size_t, std::size_t)> rmat_kernel(unsigned scale, double peak, double row0_seconds) {
  const std::size_t n = std::size_t(1) << scale;
  auto before = std::make_shared<std::vector<double>>(n + 1, 0.0);
  for (std::size_t r = 0; r < n; ++r) (*before)[r + 1] = (*before)[r] + rmat_row_cost(r, scale);
  const double per_cost = row0_seconds / rmat_row_cost(0, scale);
  return [before, scale, peak, per_cost](std::size_t begin, std::size_t size) {
    const int ones = fewest_ones(begin, begin + size - 1);
    const double heaviest = std::pow(1.52, double(int(scale) - ones)) * std::pow(0.48, double(ones));
    return std::max(5e-6 + ((*before)[begin + size] - (*before)[begin]) / peak, heaviest * per_cost);
  };
}

// Mandelbrot by rows over tools/workloads/mandelbrot_loop.hpp's window (x -2.25..0.75, y -1.5..1.5,
// 2048 iterations at most): row r of `rows` costs its pixels' escape counts (one more each: the
// write), as a multiple of the rows' mean. The rows that cross the set run the most iterations a
// pixel, the top and bottom rows a few. From a coarse render — 256 columns, at most 512 sampled
// rows, linear between them — computed once (tens of milliseconds): at 4096 rows about
// 0.008 to 4.4 times the mean, as a 512-wide render of the workload's window gave.
inline std::function<double(std::size_t)> mandelbrot_row_cost(std::size_t rows) {
  constexpr std::size_t columns = 256;
  constexpr int max_iter = 2048;
  const std::size_t sampled = std::min<std::size_t>(rows, 512);
  auto row = [&](double y) {  // at the row's centre, in the window's coordinates
    double sum = 0;
    for (std::size_t x = 0; x < columns; ++x) {
      const float cr = -2.25f + 3.0f * (float(x) + 0.5f) / float(columns), ci = float(y);
      float zr = 0, zi = 0;
      int it = 0;
      for (; it < max_iter && zr * zr + zi * zi <= 4.0f; ++it) {
        const float t = zr * zi;
        zr = zr * zr - zi * zi + cr, zi = t + t + ci;
      }
      sum += double(it) + 1;
    }
    return sum;
  };
  static std::map<std::size_t, std::shared_ptr<const std::vector<double>>> cache;  // by `sampled`
  auto& cost = cache[sampled];
  if (!cost) {
    std::vector<double> c(sampled);
    for (std::size_t k = 0; k < sampled; ++k) c[k] = row(-1.5 + 3.0 * (double(k) + 0.5) / double(sampled));
    const double mean = std::accumulate(c.begin(), c.end(), 0.0) / double(sampled);
    for (double& x : c) x /= mean;
    cost = std::make_shared<const std::vector<double>>(std::move(c));
  }
  return [cost = cost, rows, sampled](std::size_t r) {
    if (sampled < 2) return 1.0;
    const double x = std::clamp((double(r) + 0.5) / double(rows) * double(sampled) - 0.5, 0.0, double(sampled - 1));
    const std::size_t k = std::min(sampled - 2, std::size_t(x));
    return (*cost)[k] + (x - double(k)) * ((*cost)[k + 1] - (*cost)[k]);
  };
}

struct Outcome {
  double cpu_end = 0, device_end = 0;  // device_end: the latest of the devices'
  std::size_t cpu_iterations = 0, device_iterations = 0, device_chunks = 0, cpu_chunks = 0;
  std::size_t device_pieces = 0;        // the device chunks' pieces (a chunk launched whole is one)
  std::size_t leftover = 0;             // taken by the last token because the scheduler gave it nobody
  std::vector<std::size_t> per_device;  // iterations
  std::vector<std::size_t> device_chunks_of;
  std::vector<double> device_ends;  // each device's last chunk's notice (0: ran nothing)
  std::vector<int> runs;            // how many times each iteration ran
  double end() const { return std::max(cpu_end, device_end); }
  // The latest side's end minus the earliest end of a side that ran something: how long one side
  // held the call after another had stopped.
  double spread() const {
    double first = cpu_iterations ? cpu_end : end();
    for (std::size_t d = 0; d < per_device.size(); ++d)
      if (per_device[d]) first = std::min(first, device_ends[d]);
    return end() - first;
  }
};

// One call of the loop over `n` iterations; `last_call` = how long the previous call took (the
// oracle's search).
inline Outcome simulate(detail::LoopScheduler& s, const Machine& m, std::size_t n, double last_call = 0) {
  Outcome o;
  o.runs.assign(n, 0);
  o.per_device.assign(m.devices.size(), 0);
  o.device_chunks_of.assign(m.devices.size(), 0);
  o.device_ends.assign(m.devices.size(), 0.0);
  s.restart(n, last_call, m.workers > 0, !m.devices.empty());
  struct Event {
    double t;
    std::size_t order;  // ties go in submission order: the devices' first, as LoopState::begin (async)
    int agent;          // < 0: a token of device -agent-1; else a CPU worker
    std::size_t begin = 0, size = 0;
    double submitted = 0, kernel = 0;  // a device chunk's submission time and its kernel's time
    double back_end = 0;               // when its results are back (SimDevice::back; 0: nothing to bring)
    double back_seconds = 0;           // its transfers back's time, summed over its pieces
    std::size_t pieces = 1;            // launched in (LoopScheduler::device_chunk's `piece`)
    bool operator>(const Event& e) const { return t != e.t ? t > e.t : order > e.order; }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::size_t order = 0;
  for (unsigned k = 0; k < m.device_slots; ++k)  // slot by slot, as LoopState::begin
    for (std::size_t d = 0; d < m.devices.size(); ++d) events.push({0.0, order++, -int(d) - 1});
  for (unsigned w = 0; w < m.workers; ++w) events.push({0.0, order++, int(w)});
  std::size_t tokens = events.size();
  std::vector<double> device_free(m.devices.size(), 0.0);    // when its queue's last kernel ends
  std::vector<double> back_free(m.devices.size(), 0.0);      // when its last transfer back ends
  std::vector<bool> copied(m.devices.size(), false);         // its first chunk of the call went
  std::vector<double> cost_before(m.cost ? n + 1 : 0, 0.0);  // cost_before[i]: iterations [0, i) in mean costs
  for (std::size_t i = 0; m.cost && i < n; ++i) cost_before[i + 1] = cost_before[i] + m.cost(i);
  auto mean_cost = [&](std::size_t begin, std::size_t size) {
    return m.cost ? (cost_before[begin + size] - cost_before[begin]) / double(size) : 1.0;
  };
  std::size_t cursor = 0;
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    const bool device = e.agent < 0;
    const unsigned d = device ? unsigned(-e.agent - 1) : 0;
    if (e.size) {
      for (std::size_t i = e.begin; i < e.begin + e.size; ++i) ++o.runs[i];
      if (device) {
        s.record_device(d, e.begin, e.size, e.kernel, e.t - e.submitted);  // profiled kernel; host round trip
        o.device_end = std::max(o.device_end, e.t), o.device_iterations += e.size, ++o.device_chunks;
        o.device_pieces += e.pieces;
        o.per_device[d] += e.size, ++o.device_chunks_of[d];
        o.device_ends[d] = std::max(o.device_ends[d], e.t);
        if (e.back_end > 0) {
          s.record_transfer_back(d, e.size, e.back_seconds);
          o.device_end = std::max(o.device_end, e.back_end);
          o.device_ends[d] = std::max(o.device_ends[d], e.back_end);
        }
      } else {
        s.record_cpu(e.begin, e.size, double(e.size) * mean_cost(e.begin, e.size) / m.cpu_rate);
        o.cpu_end = std::max(o.cpu_end, e.t), o.cpu_iterations += e.size, ++o.cpu_chunks;
      }
    }
    const std::size_t remaining = n - cursor;
    std::size_t piece = 0;  // a device chunk launched in pieces of this size (LoopScheduler::device_chunk)
    std::size_t chunk = device ? s.device_chunk(d, remaining, e.t, &piece) : s.cpu_chunk(remaining, e.t);
    if (chunk > remaining) throw std::logic_error("a scheduler handed out more than was left");
    if (chunk == 0 && tokens == 1) chunk = remaining, o.leftover += remaining;
    if (chunk == 0) {
      --tokens;  // this token is dropped
      continue;
    }
    if (device) {
      const SimDevice& dev = m.devices[d];
      if (!copied[d]) device_free[d] = std::max(device_free[d], e.t + dev.first_copy), copied[d] = true;
      const double start = std::max(e.t + dev.launch, device_free[d]);
      // Its pieces' kernels back to back on the queue, each piece's transfer back after its kernel.
      double t = start, back_end = 0, back_seconds = 0;
      const std::size_t step = piece ? piece : chunk;
      for (std::size_t b = cursor; b < cursor + chunk; b += step) {
        const std::size_t p = std::min(step, cursor + chunk - b);
        t += dev.kernel ? dev.kernel(b, p) : double(p) * mean_cost(b, p) / dev.rate(p);
        if (dev.back > 0) {
          back_free[d] = back_end = std::max(t, back_free[d]) + dev.back_fixed + dev.back * double(p);
          back_seconds += dev.back_fixed + dev.back * double(p);
        }
      }
      const double kernel = t - start;
      device_free[d] = t;
      const double late = dev.late ? dev.late() : 0.0;
      events.push({t + dev.notice + late, order++, e.agent, cursor, chunk, e.t, kernel, back_end, back_seconds,
                   (chunk + step - 1) / step});
    } else {
      events.push({e.t + m.cpu_chunk_cost + double(chunk) * mean_cost(cursor, chunk) / m.cpu_rate, order++, e.agent,
                   cursor, chunk});
    }
    cursor += chunk;
  }
  return o;
}

// The best any split can do: every side busy until the end, devices at their saturated rate.
inline double ideal_seconds(const Machine& m, std::size_t n) {
  double rate = double(m.workers) * m.cpu_rate;
  for (const auto& dev : m.devices) rate += dev.rate(std::size_t(1) << 40);
  return double(n) / rate;
}

inline bool each_once(const Outcome& o) {
  return std::all_of(o.runs.begin(), o.runs.end(), [](int r) { return r == 1; });
}

// The loop called `calls` times (time steps), the scheduler kept: each call's outcome.
inline std::vector<Outcome> calls_of(detail::LoopScheduler& s, const Machine& m, std::size_t n, int calls) {
  std::vector<Outcome> v;
  double last = 0;
  for (int call = 0; call < calls; ++call) {
    v.push_back(simulate(s, m, n, last));
    last = v.back().end();
  }
  return v;
}

}  // namespace hetflow::sim
