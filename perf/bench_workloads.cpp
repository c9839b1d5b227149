// The papers' workloads, hand-written native OpenCL against hetflow, in one process and
// interleaved (native sync, native async, hetflow sync, hetflow async, repeated), on the default
// device (HETFLOW_DEVICE picks another).
//   bench_workloads sobel|jacobi|matpow SIZE STEPS [REPEATS=5]
//     sobel: SIZE = 720p | 1080p | 4k | 8k | 16k | WxH, STEPS = frames;  jacobi/matpow: SIZE = N, STEPS =
//     iterations/products
// Prints medians, hetflow's async gain over sync, its overhead over native async, and the
// pipelined bound max(ΣH2D, ΣD2H, Σkernels) from the native async run's profiled command times.
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "native/native_workloads.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/pipelines.hpp"
#include "bench_sizes.hpp"
#include "bench_timing.hpp"

using namespace hetflow;

namespace {

using bench::median;
using bench::parse_size;

bool identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && workloads::count_bit_differences(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s sobel|jacobi|matpow SIZE STEPS [REPEATS=5]\n", argv[0]);
    return 2;
  }
  const std::string workload = argv[1];
  const auto [w, h] = parse_size(argv[2]);
  const int steps = std::atoi(argv[3]);
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 5;
  try {
    const auto device = select_device();
    const std::string kernels = native::kernel_dir(HETFLOW_SOURCE_KERNEL_DIR_FOR_BENCH);
    auto run_native = [&](native::Mode m) {
      if (workload == "sobel") return native::run_sobel(device.device.device, {w, h, steps, kernels}, m);
      if (workload == "jacobi") return native::run_jacobi(device.device.device, {w, steps, 10, kernels}, m);
      return native::run_matpow(device.device.device, {w, steps, kernels}, m);
    };
    auto run_hetflow = [&](Policy p) {
      ControllerOptions o;
      o.policy = p;
      o.kernel_queues = 1;
      o.record = false;
      Controller c(o);
      if (workload == "sobel") return workloads::sobel(c, {w, h, steps, {}, {}});
      if (workload == "jacobi") return workloads::jacobi(c, w, steps);
      return workloads::matpow(c, w, steps);
    };

    std::vector<double> ns, na, hs, ha, h2d, d2h, ker, host;
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
      host.push_back(b.host_seconds);
      std::fprintf(stderr, "  repeat %d: native sync %.4f async %.4f | hetflow sync %.4f async %.4f\n", r, a.seconds,
                   b.seconds, c.seconds, d.seconds);
    }
    const double bound = std::max({median(h2d), median(d2h), median(ker)});
    std::printf("%s %s x %d on %s (%s), median of %d\n", workload.c_str(), argv[2], steps, device.device.name.c_str(),
                device.device.platform_name.c_str(), repeats);
    std::printf("%-10s %-10s %-10s %-10s %-9s %-10s %-9s %-9s %-9s %-9s %-8s %-6s\n", "nat.sync", "nat.async",
                "hf.sync", "hf.async", "hf.gain", "vs.native", "sumH2D", "sumD2H", "sumKern", "hostWork", "%bound",
                "ident");
    std::printf("%-10.4f %-10.4f %-10.4f %-10.4f %-8.1f%% %+-9.2f%% %-9.4f %-9.4f %-9.4f %-9.4f %-7.1f%% %-6s\n",
                median(ns), median(na), median(hs), median(ha), 100.0 * (median(hs) - median(ha)) / median(hs),
                100.0 * (median(ha) - median(na)) / median(na), median(h2d), median(d2h), median(ker), median(host),
                100.0 * bound / median(ha), same ? "yes" : "NO");
    std::printf(
        "(%%bound = max(sumH2D, sumD2H, sumKern) / hf.async; hostWork = the native async run's host work, done "
        "on one thread there, which the device bound leaves out)\n");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_workloads: %s\n", e.what());
    return 1;
  }
}
