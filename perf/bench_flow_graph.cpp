// The Sobel pipeline written as a tbb::flow::graph of hetflow's nodes (tools/workloads/sobel_flow.cpp)
// against the same pipeline written as Controller calls (tools/workloads/pipelines.cpp) and the
// hand-written native async OpenCL (perf/native), in one process, interleaved, async policy.
//   bench_flow_graph SIZE FRAMES [REPEATS=5] [SLOTS=2,4]
//     SIZE = 720p | 1080p | 4k | 8k | 16k | WxH. For each SLOTS count, all three versions with that
//     many frame slots, each repeat starting with another of the three. Prints medians, the flow
//     graph's time over the other two's medians, and the median of the per-repeat ratios
//     ("paired": the three versions of one repeat share the machine's state of that moment).
#include <hetflow/hetflow.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.hpp"
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
  for (const auto& item : bench::split_list(argc > 4 ? argv[4] : "2,4")) slot_counts.push_back(std::stoi(item));
  try {
    const auto device = select_device();
    const std::string kernels = native::kernel_dir(HETFLOW_SOURCE_KERNEL_DIR_FOR_BENCH);
    ControllerOptions o;
    o.policy = Policy::async;
    o.record = false;
    // One row per slot count: the three versions with the same frame slots, interleaved.
    std::vector<std::vector<double>> native_s(slot_counts.size()), imperative_s(slot_counts.size()),
        flow_s(slot_counts.size()), flow_over_imp(slot_counts.size()), flow_over_nat(slot_counts.size());
    bool same = true;
    for (int r = 0; r < repeats; ++r) {
      for (std::size_t i = 0; i < slot_counts.size(); ++i) {
        const int slots = slot_counts[i];
        native::SobelParams np{w, h, frames, kernels};
        np.slots = slots;
        native::Result n;
        workloads::SobelRun run{w, h, frames, {}, {}};
        run.slots = slots;
        workloads::RunResult imp, flow;
        const std::function<void()> versions[] = {
            [&] { n = native::run_sobel(device.device.device, np, native::Mode::async); },
            [&] {
              Controller c(o);
              imp = workloads::sobel(c, run);
            },
            [&] {
              Controller c(o);
              flow = workloads::sobel_flow_graph(c, run, slots);
            }};
        // Each repeat starts with another version, so none always runs first (after the others'
        // frees, or on a cooler device).
        for (int v = 0; v < 3; ++v) versions[(r + v) % 3]();
        native_s[i].push_back(n.seconds);
        imperative_s[i].push_back(imp.seconds);
        flow_s[i].push_back(flow.seconds);
        flow_over_imp[i].push_back(flow.seconds / imp.seconds);
        flow_over_nat[i].push_back(flow.seconds / n.seconds);
        same = same && imp.checksum == n.checksum && flow.checksum == imp.checksum &&
               workloads::count_bit_differences(flow.output.data(), imp.output.data(), imp.output.size()) == 0;
        std::fprintf(stderr, "  repeat %d, %d slots: native %.4f imperative %.4f flow %.4f\n", r, slots, n.seconds,
                     imp.seconds, flow.seconds);
      }
    }
    std::printf("sobel %s x %d on %s (%s), async, median of %d\n", argv[1], frames, device.device.name.c_str(),
                device.device.platform_name.c_str(), repeats);
    std::printf("%-6s %-10s %-11s %-10s %-9s %-9s %-9s %-9s %s\n", "slots", "native", "imperative", "flow", "flow/imp",
                "flow/nat", "paired/i", "paired/n", "ident");
    for (std::size_t i = 0; i < slot_counts.size(); ++i) {
      const double nat = bench::median(native_s[i]), imp = bench::median(imperative_s[i]),
                   flow = bench::median(flow_s[i]);
      std::printf("%-6d %-10.4f %-11.4f %-10.4f %+7.2f%%  %+7.2f%%  %+7.2f%%  %+7.2f%%  %s\n", slot_counts[i], nat, imp,
                  flow, 100.0 * (flow - imp) / imp, 100.0 * (flow - nat) / nat,
                  100.0 * (bench::median(flow_over_imp[i]) - 1), 100.0 * (bench::median(flow_over_nat[i]) - 1),
                  same ? "yes" : "NO");
    }
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_flow_graph: %s\n", e.what());
    return 1;
  }
}
