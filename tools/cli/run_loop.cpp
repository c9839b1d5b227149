#include "run_loop.hpp"

#include <hetflow/hetflow.hpp>
#include <hetflow/parallel_for.hpp>

#include <cstdio>

#include "commands.hpp"
#include "workloads/loop_registry.hpp"

namespace hetflow::cli {

void run_loop(const LoopRunOptions& o) {
  ControllerOptions copts;
  copts.device = o.device;
  copts.profiling = true;  // the schedulers time device chunks by their kernels' profiling counters
  if (!o.dump.empty() || !o.trace.empty()) copts.record = true;
  Controller c(copts);
  auto w = workloads::make_loop_workload(c, o.workload, o.size, o.fast_math);
  HeteroLoop loop(c, w->body(), {.scheduler = o.scheduler, .cpu_workers = o.cpu_workers});
  std::printf("hetflow run %s on %s (%s), scheduler %s\n\n", w->describe().c_str(), c.device().name.c_str(),
              c.device().platform_name.c_str(), o.scheduler.c_str());
  std::printf("%-5s %10s %14s %8s %14s %8s\n", "call", "time s", "cpu iters", "chunks", "device iters", "chunks");
  LoopReport last;
  for (int call = 0; call < o.calls; ++call) {
    w->before_call();
    w->clear_output();
    last = loop(w->size());
    std::printf("%-5d %10.4f %14zu %8zu %14zu %8zu\n", call, last.seconds, last.sides[0].iterations,
                last.sides[0].chunks, last.sides[1].iterations, last.sides[1].chunks);
  }
  std::printf("\n%s\n", last.scheduler.c_str());
  write_requested_dumps(c, o.dump, o.trace);
  if (o.verify) {
    const auto check = w->check();
    std::printf("verify against the sequential reference: %s\n", check.str().c_str());
    if (!check.ok()) throw Error(o.workload + ": the result differs from the sequential reference");
  }
}

}  // namespace hetflow::cli
