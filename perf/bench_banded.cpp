// perf/banded: what the PoCL kernel-cache guard costs (docs/drivers.md, "One kernel, several
// launches at once"). The banded heat program (tools/workloads/banded_heat.hpp) on the default
// device, variants interleaved in one process, median seconds per run:
//   async            the default (on PoCL < 7.0: launches of one kernel chained)
//   async in order   one in-order kernel queue: the other configuration that never aborted
//   sync             one queue, blocking transfers
//   async unguarded  only with --unguarded: the guard off. It may abort PoCL < 7.0 (PoCL 3.1 rarely
//                    once a process has run a few launches; 5.0 almost always), so it runs last.
//   bench_banded [size=1024] [bands=8] [steps=20] [runs=7] [--unguarded]
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "workloads/banded_heat.hpp"
#include "bench_timing.hpp"

using namespace hetflow;

namespace {

using bench::median;

struct Variant {
  const char* name;
  Policy policy;
  const char* order;  // HETFLOW_QUEUE_ORDER, or null for the default
  bool unguarded;
  std::unique_ptr<Controller> c;
  std::vector<double> seconds;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool unguarded = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--unguarded") == 0)
      unguarded = true;
    else
      args.emplace_back(argv[i]);
  }
  auto arg = [&](std::size_t i, int def) { return i < args.size() ? std::atoi(args[i].c_str()) : def; };
  workloads::HeatShape shape;
  shape.width = shape.height = arg(0, 1024);
  shape.bands = arg(1, 8);
  shape.steps = arg(2, 20);
  const int runs = arg(3, 7);
  if (shape.width < 4 || shape.bands < 1 || shape.bands > shape.height || shape.steps < 1 || runs < 1) {
    std::fprintf(stderr, "usage: bench_banded [size>=4] [bands] [steps] [runs] [--unguarded]\n");
    return 2;
  }
  std::vector<Variant> variants;
  variants.push_back({"async", Policy::async, nullptr, false, nullptr, {}});
  variants.push_back({"async, 1 in-order kernel queue", Policy::async, "in-order", false, nullptr, {}});
  variants.push_back({"sync", Policy::sync, nullptr, false, nullptr, {}});
  if (unguarded) variants.push_back({"async, unguarded", Policy::async, nullptr, true, nullptr, {}});

  const std::vector<float> expected = workloads::heat_reference(shape);
  for (auto& v : variants) {
    if (v.order) setenv("HETFLOW_QUEUE_ORDER", v.order, 1);
    if (v.unguarded) setenv("HETFLOW_DEBUG_UNGUARDED_KERNEL_CACHE", "1", 1);
    ControllerOptions o;
    o.policy = v.policy;
    o.profiling = false;
    v.c = std::make_unique<Controller>(o);
    unsetenv("HETFLOW_QUEUE_ORDER");
    unsetenv("HETFLOW_DEBUG_UNGUARDED_KERNEL_CACHE");
    if (workloads::banded_heat(*v.c, shape) != expected) {  // warm-up: builds, first allocations
      std::fprintf(stderr, "%s: wrong result\n", v.name);
      return 1;
    }
  }
  std::printf("device: %s (%s)\n", variants[0].c->device().name.c_str(),
              variants[0].c->device().platform_version.c_str());
  for (int r = 0; r < runs; ++r)
    for (auto& v : variants) {
      const auto t0 = std::chrono::steady_clock::now();
      const bool ok = workloads::banded_heat(*v.c, shape) == expected;
      v.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!ok) {
        std::fprintf(stderr, "%s: wrong result in run %d\n", v.name, r);
        return 1;
      }
    }
  std::printf("perf/banded: heat %dx%d, %d bands, %d steps (%d launches a run), median of %d\n", shape.width,
              shape.height, shape.bands, shape.steps, shape.bands * shape.steps, runs);
  std::printf("%-34s %10s %8s\n", "variant", "s/run", "vs async");
  const double base = median(variants[0].seconds);
  for (const auto& v : variants)
    std::printf("%-34s %10.4f %7.2fx\n", v.name, median(v.seconds), median(v.seconds) / base);
  return 0;
}
