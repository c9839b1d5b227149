// The papers' workloads, hand-written native OpenCL against hetflow, in one process and
// interleaved (native sync, native async, hetflow sync, hetflow async, repeated), on the default
// device (HETFLOW_DEVICE picks another).
//   bench_workloads sobel|jacobi|matpow SIZE STEPS [REPEATS=5] [--slots N] [--host-threads N] [--only V]
//     sobel: SIZE = 720p | 1080p | 4k | 8k | 16k | WxH, STEPS = frames;  jacobi/matpow: SIZE = N,
//     STEPS = iterations/products; --slots, --host-threads: Sobel's, for all four variants;
//     --only V: one variant alone (nat.sync, nat.async, hf.sync or hf.async), its time per repeat and
//     nothing else, so that a profiler sees it alone (perf record -- bench_workloads ... --only hf.sync)
// Prints medians, hetflow's async gain over sync, its overhead over native async, and the bound:
// the least time the machine allows, from measurements taken in this process but outside the runs
// it judges (perf/copy_probe.hpp for the copies, a host-work probe, the kernels' profiled time in
// the native sync runs, where nothing runs beside them).
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "native/native_workloads.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"
#include "workloads/pipelines.hpp"
#include "bench_sizes.hpp"
#include "workloads/sobel_sizing.hpp"
#include "bench_timing.hpp"
#include "copy_probe.hpp"

using namespace hetflow;

namespace {

using bench::median;
using bench::parse_size;

int positive(const std::string& flag, const char* value) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (!*value || *end || v <= 0 || v > 1 << 20)
    throw UsageError(flag + " needs a positive whole number, got '" + std::string(value) + "'");
  return static_cast<int>(v);
}

bool identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && workloads::count_bit_differences(a.data(), b.data(), a.size()) == 0;
}

// What one run moves and how much host work it does, in units the probes measure.
struct Volume {
  double bytes_in = 0, bytes_out = 0;  // host → device, device → host
  std::size_t transfer_floats = 0;     // one transfer's size (the copy probe's)
  int host_items = 0;                  // Sobel: frames (generation + sum); Jacobi: snapshots; matpow: norms
};

Volume volume_of(const std::string& workload, int w, int h, int steps) {
  const std::size_t count = std::size_t(w) * std::size_t(h);
  const double bytes = double(count) * sizeof(float);
  Volume v;
  v.transfer_floats = count;
  if (workload == "sobel") {
    v.bytes_in = v.bytes_out = bytes * steps;
    v.host_items = steps;
  } else if (workload == "jacobi") {
    const int snapshots = steps / 10;  // copy_every = 10, as run below
    v.bytes_in = bytes;
    v.bytes_out = bytes * (snapshots + (steps % 10 != 0 || steps == 0 ? 1 : 0));
    v.host_items = snapshots;
  } else {
    v.bytes_in = bytes;
    v.bytes_out = bytes * steps;
    v.host_items = steps;
  }
  return v;
}

// One item of the workload's host work (Sobel: a frame generated into `a` and one summed from `b`)
// on `arena`'s threads.
double host_item(const std::string& workload, int w, int h, int index, std::vector<float>& a,
                 const std::vector<float>& b, tbb::task_arena& arena) {
  double sum = 0;
  arena.execute([&] {
    if (workload == "sobel") {
      workloads::generate_frame(a.data(), w, h, index);
      sum = workloads::host_sum(b.data(), b.size());
    } else if (workload == "jacobi") {
      sum = workloads::host_sum(b.data(), b.size());
    } else {
      sum = workloads::frobenius_norm(b.data(), b.size());
    }
  });
  return sum;
}

// Seconds of host work per item on the threads the workload gives it, best of three after a
// warm-up, alone on the machine.
double host_seconds_per_item(const std::string& workload, int w, int h, tbb::task_arena& arena) {
  const std::size_t count = std::size_t(w) * std::size_t(h);
  std::vector<float> a(count), b(count);
  workloads::generate_frame(b.data(), w, h, 1);
  double best = 1e30, sink = 0;
  for (int r = 0; r < 4; ++r) {
    const double s = bench::seconds_of([&] { sink += host_item(workload, w, h, r, a, b, arena); });
    if (r > 0) best = std::min(best, s);
  }
  if (sink == -1) std::printf(" ");  // keeps the sums from being optimised away
  return best;
}

// Seconds per item of host work done while the copy engines move the item's bytes both ways at
// once, as they do beside it in a pipeline: both share the host's memory, which neither term alone
// sees. Best of three after a warm-up; a lower bound of any schedule that overlaps them.
double together_seconds_per_item(const std::string& workload, int w, int h, const Volume& vol, bench::CopyProbe& probe,
                                 tbb::task_arena& arena) {
  const std::size_t count = std::size_t(w) * std::size_t(h);
  std::vector<float> a(count), b(count);
  workloads::generate_frame(b.data(), w, h, 1);
  // The copies of `items` items, in the probe's transfers (rounded up).
  const int items = 2;
  const double bytes_per_item = std::max(vol.bytes_in, vol.bytes_out) / std::max(vol.host_items, 1);
  const int copies = std::max(1, int(std::ceil(items * bytes_per_item / double(probe.bytes()))));
  double best = 1e30, sink = 0;
  for (int r = 0; r < 4; ++r) {
    const double s = probe.run_alongside(copies, [&] {
      for (int i = 0; i < items; ++i) sink += host_item(workload, w, h, i, a, b, arena);
    });
    if (r > 0) best = std::min(best, s / items);
  }
  if (sink == -1) std::printf(" ");
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  int slots = 0, host_threads = 0;
  std::string only;
  const std::vector<std::string> variants{"nat.sync", "nat.async", "hf.sync", "hf.async"};
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if ((a == "--slots" || a == "--host-threads") && i + 1 < argc)
        (a == "--slots" ? slots : host_threads) = positive(a, argv[++i]);
      else if (a == "--only" && i + 1 < argc) {
        only = argv[++i];
        if (std::find(variants.begin(), variants.end(), only) == variants.end())
          throw UsageError("--only: '" + only + "' is not a variant (nat.sync, nat.async, hf.sync, hf.async)");
      } else if (a.rfind("--", 0) == 0)
        throw UsageError("unknown option '" + a +
                         "' (--slots N, --host-threads N, --only nat.sync|nat.async|hf.sync|hf.async)");
      else
        pos.push_back(a);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_workloads: %s\n", e.what());
    return 2;
  }
  if (pos.size() < 3 || pos.size() > 4) {
    std::fprintf(stderr,
                 "usage: %s sobel|jacobi|matpow SIZE STEPS [REPEATS=5] [--slots N] [--host-threads N] [--only V]\n",
                 argv[0]);
    return 2;
  }
  const std::string workload = pos[0];
  const auto [w, h] = parse_size(pos[1]);
  const int steps = std::atoi(pos[2].c_str());
  const int repeats = pos.size() > 3 ? std::atoi(pos[3].c_str()) : 5;
  try {
    const auto device = select_device();
    const cl::Device& cl_device = device.device.device;
    const std::string kernels = native::kernel_dir(HETFLOW_SOURCE_KERNEL_DIR_FOR_BENCH);
    const bool sobel = workload == "sobel";
    const int used_slots = slots > 0 ? slots : workloads::kDefaultSobelSlots;
    const auto arena = sobel ? workloads::host_arena(cl_device, host_threads) : std::make_shared<tbb::task_arena>();
    auto run_native = [&](native::Mode m) {
      if (sobel) return native::run_sobel(cl_device, {w, h, steps, kernels, slots, host_threads}, m);
      if (workload == "jacobi") return native::run_jacobi(cl_device, {w, steps, 10, kernels}, m);
      return native::run_matpow(cl_device, {w, steps, kernels}, m);
    };
    auto run_hetflow = [&](Policy p) {
      ControllerOptions o;
      o.policy = p;
      o.kernel_queues = 1;
      o.record = false;
      Controller c(o);
      if (sobel) return workloads::sobel(c, {w, h, steps, {}, {}, slots, host_threads});
      if (workload == "jacobi") return workloads::jacobi(c, w, steps);
      return workloads::matpow(c, w, steps);
    };

    if (!only.empty()) {
      for (int r = 0; r < repeats; ++r) {
        const double t = only == "nat.sync"    ? run_native(native::Mode::sync).seconds
                         : only == "nat.async" ? run_native(native::Mode::async).seconds
                         : only == "hf.sync"   ? run_hetflow(Policy::sync).seconds
                                               : run_hetflow(Policy::async).seconds;
        std::printf("%s %s x %d, %s, repeat %d: %.4f s\n", workload.c_str(), pos[1].c_str(), steps, only.c_str(), r, t);
      }
      return 0;
    }
    // The machine's limits, measured before the runs: pinned copy rates at one transfer's size
    // (at most 256 MiB, at least 1 MiB), and the host work alone on its threads.
    const Volume vol = volume_of(workload, w, h, steps);
    const std::size_t probe_bytes =
        std::clamp<std::size_t>(vol.transfer_floats * sizeof(float), std::size_t{1} << 20, std::size_t{256} << 20);
    const bench::CopyRates rates = bench::measure_copy_rates(cl_device, probe_bytes, 5);
    const double copy_bound = bench::copy_seconds_bound(rates, vol.bytes_in, vol.bytes_out);
    const double host_bound = vol.host_items * host_seconds_per_item(workload, w, h, *arena);
    // Where every item has host work and copies both ways (Sobel), they also run at once.
    double together_bound = 0;
    if (sobel) {
      bench::CopyProbe probe(cl_device, probe_bytes);
      together_bound = vol.host_items * together_seconds_per_item(workload, w, h, vol, probe, *arena);
    }

    std::vector<double> ns, na, hs, ha, h2d, d2h, ker, ker_sync, host;
    bool same = true;
    for (int r = 0; r < repeats; ++r) {
      const auto a = run_native(native::Mode::sync);
      const auto b = run_native(native::Mode::async);
      const auto c = run_hetflow(Policy::sync);
      const auto d = run_hetflow(Policy::async);
      same = same && identical(a.output, d.output) && identical(b.output, c.output) && a.checksum == d.checksum &&
             b.checksum == c.checksum;
      ns.push_back(a.seconds);
      na.push_back(b.seconds);
      hs.push_back(c.seconds);
      ha.push_back(d.seconds);
      h2d.push_back(b.h2d_seconds);
      d2h.push_back(b.d2h_seconds);
      ker.push_back(b.kernel_seconds);
      ker_sync.push_back(a.kernel_seconds);
      host.push_back(b.host_seconds);
      std::fprintf(stderr, "  repeat %d: native sync %.4f async %.4f | hetflow sync %.4f async %.4f\n", r, a.seconds,
                   b.seconds, c.seconds, d.seconds);
    }
    const double kernel_bound = *std::min_element(ker_sync.begin(), ker_sync.end());
    const double bound = std::max({copy_bound, kernel_bound, host_bound});
    const char* binding = bound == copy_bound ? "copies" : bound == kernel_bound ? "kernels" : "host work";
    const double shared_bound = std::max(bound, together_bound);
    std::printf("%s %s x %d on %s (%s), median of %d", workload.c_str(), pos[1].c_str(), steps,
                device.device.name.c_str(), device.device.platform_name.c_str(), repeats);
    if (sobel) std::printf(", %d slots, host work on %d threads", used_slots, arena->max_concurrency());
    std::printf("\n");
    std::printf("%-10s %-10s %-10s %-10s %-9s %-10s %-9s %-9s %-9s %-9s %-8s %-6s\n", "nat.sync", "nat.async",
                "hf.sync", "hf.async", "hf.gain", "vs.native", "sumH2D", "sumD2H", "sumKern", "hostWork", "%bound",
                "ident");
    std::printf("%-10.4f %-10.4f %-10.4f %-10.4f %-8.1f%% %+-9.2f%% %-9.4f %-9.4f %-9.4f %-9.4f %-7.1f%% %-6s\n",
                median(ns), median(na), median(hs), median(ha), 100.0 * (median(hs) - median(ha)) / median(hs),
                100.0 * (median(ha) - median(na)) / median(na), median(h2d), median(d2h), median(ker), median(host),
                100.0 * bound / median(ha), same ? "yes" : "NO");
    std::printf(
        "bound %.4f s (%s) = max(copies %.4f, kernels %.4f, host work %.4f); pinned copy rates (%zu MiB probe, GB/s): "
        "H2D %.1f, D2H %.1f, both at once %.1f each\n",
        bound, binding, copy_bound, kernel_bound, host_bound, probe_bytes >> 20, rates.h2d * 1e-9, rates.d2h * 1e-9,
        rates.both * 1e-9);
    if (together_bound > 0)
      std::printf(
          "host work and copies at once: %.4f s; against it (the bound when host work and copies share the "
          "host's memory) hf.async is at %.1f %%, nat.async at %.1f %%\n",
          together_bound, 100.0 * shared_bound / median(ha), 100.0 * shared_bound / median(na));
    std::printf(
        "(sumH2D/sumD2H/sumKern/hostWork: the native async runs' profiled command times and host-thread time; "
        "copies: %.3g MB in, %.3g MB out at the probe's rates, both directions at once where that is faster; "
        "kernels: the least sumKern of the native sync runs; host work: %d items x the best time of one alone on "
        "its threads; %%bound = bound / hf.async)\n",
        vol.bytes_in * 1e-6, vol.bytes_out * 1e-6, vol.host_items);
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_workloads: %s\n", e.what());
    return 1;
  }
}
