// The Sobel pipeline written as a tbb::flow::graph of hetflow's nodes (tools/workloads/sobel_flow.cpp)
// against the same pipeline written as Controller calls (tools/workloads/pipelines.cpp) and the
// hand-written native async OpenCL (perf/native), in one process, interleaved, async policy.
//   bench_flow_graph SIZE FRAMES [REPEATS=5] [SLOTS=2,4]
//     SIZE = 4k | 8k | 16k | WxH.  The imperative versions have 2 frame slots; the flow graph runs
//     with each SLOTS count. Prints medians and the flow graph's time over the imperative one's.
#include <hetflow/hetflow.hpp>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_sizes.hpp"
#include "bench_timing.hpp"
#include "native/native_workloads.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/pipelines.hpp"
#include "workloads/sobel_flow.hpp"

using namespace hetflow;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SIZE FRAMES [REPEATS=5] [SLOTS=2,4]\n", argv[0]);
    return 2;
  }
  const auto [w, h] = bench::parse_size(argv[1]);
  const int frames = std::atoi(argv[2]);
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  std::vector<int> slot_counts;
  {
    std::stringstream ss(argc > 4 ? argv[4] : "2,4");
    for (std::string item; std::getline(ss, item, ',');) slot_counts.push_back(std::stoi(item));
  }
  try {
    const auto device = select_device();
    const std::string kernels = native::kernel_dir(HETFLOW_SOURCE_KERNEL_DIR_FOR_BENCH);
    ControllerOptions o;
    o.policy = Policy::async;
    o.record = false;
    const workloads::SobelRun run{w, h, frames, {}, {}};
    std::vector<double> native_s, imperative_s;
    std::vector<std::vector<double>> flow_s(slot_counts.size());
    bool same = true;
    for (int r = 0; r < repeats; ++r) {
      const auto n = native::run_sobel(device.device.device, {w, h, frames, kernels}, native::Mode::async);
      native_s.push_back(n.seconds);
      workloads::RunResult imp;
      {
        Controller c(o);
        imp = workloads::sobel(c, run);
      }
      imperative_s.push_back(imp.seconds);
      same = same && imp.checksum == n.checksum;
      for (std::size_t i = 0; i < slot_counts.size(); ++i) {
        Controller c(o);
        const auto f = workloads::sobel_flow_graph(c, run, slot_counts[i]);
        flow_s[i].push_back(f.seconds);
        same = same && f.checksum == imp.checksum &&
               workloads::count_bit_differences(f.output.data(), imp.output.data(), imp.output.size()) == 0;
      }
      std::fprintf(stderr, "  repeat %d: native %.4f imperative %.4f flow %.4f\n", r, n.seconds, imp.seconds,
                   flow_s[0].back());
    }
    std::printf("sobel %s x %d on %s (%s), async, median of %d\n", argv[1], frames, device.device.name.c_str(),
                device.device.platform_name.c_str(), repeats);
    std::printf("%-12s %-12s", "native(2)", "imperative(2)");
    for (int s : slot_counts) std::printf(" flow(%d)%-5s flow/imp", s, "");
    std::printf("  ident\n%-12.4f %-13.4f", bench::median(native_s), bench::median(imperative_s));
    for (auto& v : flow_s)
      std::printf(" %-11.4f %+6.2f%%", bench::median(v),
                  100.0 * (bench::median(v) - bench::median(imperative_s)) / bench::median(imperative_s));
    std::printf("  %s\n", same ? "yes" : "NO");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_flow_graph: %s\n", e.what());
    return 1;
  }
}
