// What a host task's own parallel work gets: one 4K generate_frame (a tbb::parallel_for, in a
// task_arena of every core as the Sobel workload runs it) timed inside its caller, called from the
// main thread, from a worker (a tbb::flow function_node, a task_group) and from a hetflow host task
// while the program waits (sync, async, async with each task after the one before). Then the same
// with TBB allowed one thread more than the cores (tbb::global_control), as if a thread blocked in
// a wait were not counted.
//   bench_host_parallelism [calls per variant = 40]
#include <hetflow/hetflow.hpp>
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "bench_timing.hpp"
#include "workloads/frames.hpp"

using namespace hetflow;

int main(int argc, char** argv) {
  const int w = 3840, h = 2160, n = argc > 1 ? std::atoi(argv[1]) : 40;
  if (n < 1) {
    std::fprintf(stderr, "usage: bench_host_parallelism [calls per variant >= 1]\n");
    return 2;
  }
  try {
    const std::size_t count = std::size_t(w) * std::size_t(h);
    std::vector<float> frame(count);
    tbb::task_arena arena(int(std::thread::hardware_concurrency()));
    auto timed_generate = [&](int i) {
      const auto t = std::chrono::steady_clock::now();
      arena.execute([&] { workloads::generate_frame(frame.data(), w, h, i); });
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    };
    std::printf("ms per 4K generate_frame, median of %d calls, %u cores\n", n, std::thread::hardware_concurrency());
    std::printf("%-22s %8s %8s %8s %8s %8s %8s\n", "threads", "main", "flow", "tgroup", "hf.sync", "hf.async",
                "chained");
    std::unique_ptr<tbb::global_control> one_more;
    for (int round = 0; round < 4; ++round) {
      if (round == 2)
        one_more = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                         std::thread::hardware_concurrency() + 1);
      std::vector<double> main_s, flow_s, group_s, sync_s, async_s, chained_s;
      for (int i = 0; i < n; ++i) main_s.push_back(timed_generate(i));
      {
        tbb::flow::graph g;
        tbb::flow::function_node<int> node(g, tbb::flow::serial, [&](int i) { flow_s.push_back(timed_generate(i)); });
        for (int i = 0; i < n; ++i) {
          node.try_put(i);
          g.wait_for_all();
        }
      }
      {
        tbb::task_group tg;
        for (int i = 0; i < n; ++i) {
          tg.run([&, i] { group_s.push_back(timed_generate(i)); });
          tg.wait();
        }
      }
      for (Policy p : {Policy::sync, Policy::async}) {
        ControllerOptions o;
        o.policy = p;
        o.record = false;
        Controller c(o);
        auto tile = c.tile<float>(16, "tile");
        auto& into = p == Policy::sync ? sync_s : async_s;
        for (int i = 0; i < n; ++i) {
          c.host_task(
              "generate", [&, i] { into.push_back(timed_generate(i)); }, out(tile));
          c.wait_all();
        }
        if (p == Policy::async) {
          for (int i = 0; i < n; ++i)
            c.host_task(
                "generate", [&, i] { chained_s.push_back(timed_generate(i)); }, io(tile));
          c.wait_all();
        }
      }
      std::printf("%-22s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", round < 2 ? "cores" : "cores + 1 (TBB limit)",
                  bench::median(main_s), bench::median(flow_s), bench::median(group_s), bench::median(sync_s),
                  bench::median(async_s), bench::median(chained_s));
    }
    std::printf(
        "(main: called on the main thread; flow: in a function_node, the main thread in graph::wait_for_all; tgroup: "
        "in a task_group task, the main thread in wait; hf.*: in a hetflow host task, the main thread in wait_all; "
        "chained: n host tasks submitted at once, each after the one before)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_host_parallelism: %s\n", e.what());
    return 1;
  }
  return 0;
}
