// One loop workload through hetflow::parallel_for with every scheduler, side by side in one process:
// CPU only, device only, the oracle's best static split, dynamic, HGuided and LogFit. Each variant is
// a HeteroLoop kept across calls (time steps); the calls of all variants are interleaved, and the
// first CALLS/3 of each are left out of the medians (LogFit explores there). The oracle searches its
// best static split first, untimed (one share per call: 11, then up to 8 more around the best).
//   bench_loops WORKLOAD SIZE [CALLS=12] [DYNAMIC_CHUNK=n/64] [--fast-math]
//     WORKLOAD = mandelbrot | nbody | spmv | barneshut; SIZE as `hetflow run`'s --size.
// Prints per variant the median time, the iterations the device ran, and the efficiency against the
// ideal 1 / (1/T_cpu + 1/T_device) (EngineCL's and LogFit's measure).
#include <hetflow/hetflow.hpp>
#include <hetflow/parallel_for.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "workloads/loop_registry.hpp"

using namespace hetflow;

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool fast = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--fast-math")
      fast = true;
    else
      args.emplace_back(argv[i]);
  }
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: %s mandelbrot|nbody|spmv|barneshut SIZE [CALLS=12] [DYNAMIC_CHUNK] [--fast-math]\n",
                 argv[0]);
    return 2;
  }
  try {
    const int calls = args.size() > 2 ? std::atoi(args[2].c_str()) : 12;
    ControllerOptions copts;
    copts.profiling = true;  // device chunks are timed by their kernels' profiling counters
    Controller c(copts);
    auto w = workloads::make_loop_workload(c, args[0], std::stoull(args[1]), fast);
    const std::size_t n = w->size();
    const std::size_t chunk = args.size() > 3 ? std::stoull(args[3]) : std::max<std::size_t>(64, n / 64);
    struct Variant {
      std::string label, scheduler;
      bool cpu = true, device = true;
      std::vector<double> seconds;
      std::vector<std::size_t> device_iterations;
      std::unique_ptr<HeteroLoop> loop;
    };
    auto variant = [](std::string label, std::string scheduler, bool cpu = true, bool device = true) {
      Variant v;
      v.label = std::move(label);
      v.scheduler = std::move(scheduler);
      v.cpu = cpu;
      v.device = device;
      return v;
    };
    const std::string dynamic = "dynamic:" + std::to_string(chunk);
    std::vector<Variant> variants;
    variants.push_back(variant("cpu only", dynamic, true, false));
    variants.push_back(variant("device only", "dynamic:" + std::to_string(n), false, true));
    variants.push_back(variant("oracle", "oracle"));
    variants.push_back(variant(dynamic, dynamic));
    variants.push_back(variant("hguided", "hguided"));
    variants.push_back(variant("logfit", "logfit"));
    for (auto& v : variants) {
      LoopBody b = w->body();
      if (!v.cpu) b.cpu = nullptr;
      if (!v.device) b.device = nullptr;
      v.loop = std::make_unique<HeteroLoop>(c, b, LoopOptions{.scheduler = v.scheduler});
    }
    w->before_call();
    std::string oracle_found;
    for (auto& v : variants)
      if (v.scheduler == "oracle")
        for (int call = 0; call < 40; ++call) {
          w->clear_output();
          oracle_found = (*v.loop)(n).scheduler;
          if (oracle_found.find("searching") == std::string::npos) break;
        }
    bool ok = true;
    for (int call = 0; call < calls; ++call)
      for (auto& v : variants) {
        w->clear_output();
        const auto r = (*v.loop)(n);
        v.seconds.push_back(r.seconds);
        v.device_iterations.push_back(r.sides[1].iterations);
        if (call == calls - 1 && n <= (std::size_t(1) << 16)) ok = ok && w->check().ok();  // small: check every variant
      }
    auto steady = [&](const std::vector<double>& s) {
      return bench::median(std::vector<double>(s.begin() + calls / 3, s.end()));
    };
    const double t_cpu = steady(variants[0].seconds), t_dev = steady(variants[1].seconds);
    const double ideal = 1.0 / (1.0 / t_cpu + 1.0 / t_dev);
    std::printf("%s on %s (%s), %d calls each, medians of the last %d\n", w->describe().c_str(),
                c.device().name.c_str(), c.device().platform_name.c_str(), calls, calls - calls / 3);
    std::printf("%-18s %10s %12s %10s %10s\n", "variant", "time s", "device share", "efficiency", "vs device");
    for (auto& v : variants) {
      const double t = steady(v.seconds);
      const double share = double(v.device_iterations.back()) / double(n);
      std::printf("%-18s %10.4f %11.1f%% %10.3f %+9.1f%%\n", v.label.c_str(), t, 100 * share, ideal / t,
                  100 * (t - t_dev) / t_dev);
    }
    std::printf("%s\n", oracle_found.c_str());
    std::printf("ideal %.4f s = 1 / (1/T_cpu + 1/T_device); results %s\n", ideal,
                n <= (std::size_t(1) << 16) ? (ok ? "checked: ok" : "checked: WRONG") : "not checked (large)");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loops: %s\n", e.what());
    return 1;
  }
}
