#include "run_loop.hpp"

#include <hetflow/hetflow.hpp>
#include <hetflow/parallel_for.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <vector>

#include "commands.hpp"
#include "workloads/loop_registry.hpp"

namespace hetflow::cli {
namespace {
std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}
}  // namespace

void run_loop(const LoopRunOptions& o) {
  const std::vector<std::string> selections = o.devices.empty() ? std::vector<std::string>{o.device} : o.devices;
  // A selection naming Oclgrind registers it, which only the process's first OpenCL call can do:
  // resolved before any controller, wherever it stands in the list.
  for (const auto& sel : selections)
    if (lowercase(sel).find("oclgrind") != std::string::npos) {
      select_device(sel, o.devices.empty() ? "--device" : "--devices");
      break;
    }
  std::vector<std::unique_ptr<Controller>> ctls;
  std::vector<Controller*> list;
  for (const auto& sel : selections) {
    ControllerOptions copts;
    copts.device = sel;
    copts.device_origin = o.devices.empty() ? "--device" : "--devices";
    if (o.policy) copts.policy = *o.policy;
    if (o.kernel_queues > 0) copts.kernel_queues = o.kernel_queues;
    copts.profiling = true;  // the schedulers time device chunks by their kernels' profiling counters
    if (!o.dump.empty() || !o.trace.empty()) copts.record = true;
    ctls.push_back(std::make_unique<Controller>(copts));
    list.push_back(ctls.back().get());
  }
  Controller& c = *ctls.front();  // the home controller: the workload's tiles and kernels
  auto w =
      device_limits_are_the_runs([&] { return workloads::make_loop_workload(c, o.workload, o.size, o.fast_math); });
  LoopOptions options{.scheduler = o.scheduler, .cpu_workers = o.cpu_workers};
  if (o.device_slots != 0) options.device_slots = o.device_slots;
  HeteroLoop loop(list, w->body(), options);
  std::printf("hetflow run %s on ", w->describe().c_str());
  for (std::size_t d = 0; d < ctls.size(); ++d)
    std::printf("%s%s (%s)", d ? " + " : "", ctls[d]->device().name.c_str(), ctls[d]->device().platform_name.c_str());
  std::printf(", scheduler %s\n\n", o.scheduler.c_str());
  std::printf("%-5s %10s %14s %8s", "call", "time s", "cpu iters", "chunks");
  for (std::size_t d = 0; d < ctls.size(); ++d)
    std::printf(" %14s %8s", ctls.size() == 1 ? "device iters" : ("dev" + std::to_string(d) + " iters").c_str(),
                "chunks");
  std::printf("\n");
  LoopReport last;
  for (int call = 0; call < o.calls; ++call) {
    w->before_call();
    w->clear_output();
    last = with_dumps_of_a_failure(c, o.dump, o.trace,
                                   [&] { return device_limits_are_the_runs([&] { return loop(w->size()); }); });
    std::printf("%-5d %10.4f", call, last.seconds);
    for (const auto& side : last.sides) std::printf(" %14zu %8zu", side.iterations, side.chunks);
    std::printf("\n");
  }
  std::printf("\n%s\n", last.scheduler.c_str());
  write_requested_dumps(c, o.dump, o.trace);  // the home controller's requests (the CPU chunks')
  // Each further device's own, beside them (run.json → run.dev1.json): its chunks, transfers and hooks.
  for (std::size_t d = 1; d < ctls.size(); ++d) {
    const std::string beside = ".dev" + std::to_string(d) + ".json";
    write_requested_dumps(*ctls[d], o.dump.empty() ? "" : dump_companion(o.dump, beside.c_str()),
                          o.trace.empty() ? "" : dump_companion(o.trace, beside.c_str()));
  }
  if (o.verify) {
    const auto check = w->check();
    std::printf("verify against the sequential reference: %s\n", check.str().c_str());
    if (!check.ok()) throw Error(o.workload + ": the result differs from the sequential reference");
  }
}

}  // namespace hetflow::cli
