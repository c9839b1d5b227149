// One loop workload through hetflow::parallel_for with every scheduler, side by side in one process:
// CPU only, device only, the oracle's best static split, dynamic, HGuided and LogFit. Each variant is
// a HeteroLoop kept across calls (time steps); the calls of all variants are interleaved, and the
// first CALLS/3 of each are left out of the medians (LogFit explores there). The oracle searches its
// best static split first, untimed (one share per call: 11, then up to 8 more around the best).
//   bench_loops WORKLOAD SIZE [CALLS=12] [DYNAMIC_CHUNK=n/64] [--fast-math] [--no-profiling]
//     WORKLOAD = mandelbrot | nbody | spmv | barneshut; SIZE as `hetflow run`'s --size.
//     --no-profiling: the controllers do not profile, so device chunks are timed by the host clock
//     (NVIDIA charges ~6 us a command for a profiled event: docs/parallel-for.md).
// Prints per variant the median time, the iterations the device ran, and the efficiency against the
// ideal 1 / (1/T_cpu + 1/T_device) (EngineCL's and LogFit's measure).
//
// With HETFLOW_LOOP_DEVICES=SEL,SEL[,...] (device selections as HETFLOW_DEVICE's, one controller
// each; the same one twice makes two controllers on one device) it compares the devices instead:
// CPU only, each device alone, CPU + each device, and CPU + all of them (one loop over every
// controller), under LogFit and HGuided; efficiency against 1 / (1/T_cpu + sum of 1/T_device).
#include <hetflow/hetflow.hpp>
#include <hetflow/parallel_for.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "workloads/loop_registry.hpp"

using namespace hetflow;

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  for (std::size_t from = 0;;) {
    const std::size_t comma = text.find(',', from);
    parts.push_back(text.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) return parts;
    from = comma + 1;
  }
}

// The same loop on CPU + device d for each d, and on CPU + all devices. Each device's workload has
// tiles of its own controller (a one-device loop must own its tiles); the loop over all devices uses
// the first's, which the others reach through their views (include/hetflow/parallel_for.hpp).
int compare_devices(const std::vector<std::string>& selections, const std::string& workload, std::size_t size,
                    int calls, bool fast, bool profiling) {
  std::vector<std::unique_ptr<Controller>> ctls;
  std::vector<std::unique_ptr<workloads::LoopWorkload>> ws;
  for (const auto& sel : selections) {
    if (sel.empty()) throw UsageError("HETFLOW_LOOP_DEVICES has an empty device selection");
    ControllerOptions o;
    o.device = sel;
    o.profiling = profiling;  // device chunks are timed by their kernels' profiling counters
    ctls.push_back(std::make_unique<Controller>(o));
    ws.push_back(workloads::make_loop_workload(*ctls.back(), workload, size, fast));
  }
  const std::size_t n = ws[0]->size();
  const std::size_t devices = ctls.size();
  struct Row {
    std::string label;
    std::size_t workload;  // whose tiles
    std::vector<double> seconds;
    std::vector<std::size_t> last_sides;
    std::unique_ptr<HeteroLoop> loop;
    int alone = -2;         // -1: the CPU alone, d: device d alone; -2 otherwise
    std::vector<int> uses;  // the devices it runs on (for its ideal)
  };
  std::vector<Row> rows;
  auto add = [&](std::string label, std::size_t wl, std::vector<Controller*> list, std::string scheduler, bool cpu,
                 bool dev, int alone, std::vector<int> uses) {
    LoopBody b = ws[wl]->body();
    if (!cpu) b.cpu = nullptr;
    if (!dev) b.device = nullptr;
    Row r;
    r.label = std::move(label);
    r.workload = wl;
    r.alone = alone;
    r.uses = std::move(uses);
    r.loop = std::make_unique<HeteroLoop>(std::move(list), b, LoopOptions{.scheduler = std::move(scheduler)});
    rows.push_back(std::move(r));
  };
  add("cpu only", 0, {ctls[0].get()}, "dynamic:" + std::to_string(std::max<std::size_t>(64, n / 64)), true, false, -1,
      {});
  for (std::size_t d = 0; d < devices; ++d) {
    const std::string dn = "dev" + std::to_string(d);
    add(dn + " only", d, {ctls[d].get()}, "dynamic:" + std::to_string(n), false, true, int(d), {int(d)});
    for (const char* s : {"logfit", "hguided"})
      add("cpu+" + dn + " " + s, d, {ctls[d].get()}, s, true, true, -2, {int(d)});
  }
  std::vector<Controller*> all;
  std::vector<int> every;
  for (std::size_t d = 0; d < devices; ++d) all.push_back(ctls[d].get()), every.push_back(int(d));
  add("devs only hguided", 0, all, "hguided", false, true, -2, every);
  for (const char* s : {"logfit", "hguided"}) add(std::string("cpu+devs ") + s, 0, all, s, true, true, -2, every);

  for (auto& w : ws) w->before_call();
  bool ok = true;
  for (int call = 0; call < calls; ++call)
    for (auto& r : rows) {
      ws[r.workload]->clear_output();
      const auto rep = (*r.loop)(n);
      r.seconds.push_back(rep.seconds);
      r.last_sides.clear();
      for (const auto& side : rep.sides) r.last_sides.push_back(side.iterations);
      if (call == calls - 1 && n <= (std::size_t(1) << 16)) ok = ok && ws[r.workload]->check().ok();
    }
  auto steady = [&](const std::vector<double>& s) {
    return bench::median(std::vector<double>(s.begin() + calls / 3, s.end()));
  };
  double t_cpu = 0;
  std::vector<double> t_dev(devices, 0);
  for (auto& r : rows)
    if (r.alone == -1)
      t_cpu = steady(r.seconds);
    else if (r.alone >= 0)
      t_dev[std::size_t(r.alone)] = steady(r.seconds);
  std::printf("%s, %d calls each, medians of the last %d%s\n", ws[0]->describe().c_str(), calls, calls - calls / 3,
              profiling ? "" : ", no profiling (chunks timed by the host clock)");
  for (std::size_t d = 0; d < devices; ++d)
    std::printf("dev%zu = %s (%s), selected by '%s'\n", d, ctls[d]->device().name.c_str(),
                ctls[d]->device().platform_name.c_str(), selections[d].c_str());
  std::printf("%-22s %10s %10s  %s\n", "variant", "time s", "efficiency", "shares (cpu, then its devices)");
  for (auto& r : rows) {
    const double t = steady(r.seconds);
    double rate = r.alone >= 0 ? 0 : 1.0 / t_cpu;
    for (int d : r.uses) rate += 1.0 / t_dev[std::size_t(d)];
    std::string shares;
    for (std::size_t s = 0; s < r.last_sides.size(); ++s) {
      if (s) shares += ' ';
      shares += std::to_string(std::lround(100.0 * double(r.last_sides[s]) / double(n)));
      shares += '%';
    }
    std::printf("%-22s %10.4f %10.3f  %s\n", r.label.c_str(), t, (1.0 / rate) / t, shares.c_str());
  }
  std::printf("efficiency: 1 / (1/T_cpu + sum of 1/T_device over the row's devices), over its time; results %s\n",
              n <= (std::size_t(1) << 16) ? (ok ? "checked: ok" : "checked: WRONG") : "not checked (large)");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool fast = false, profiling = true;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--fast-math")
      fast = true;
    else if (std::string(argv[i]) == "--no-profiling")
      profiling = false;
    else
      args.emplace_back(argv[i]);
  }
  if (args.size() < 2) {
    std::fprintf(
        stderr,
        "usage: %s mandelbrot|nbody|spmv|barneshut SIZE [CALLS=12] [DYNAMIC_CHUNK] [--fast-math] [--no-profiling]\n",
        argv[0]);
    return 2;
  }
  try {
    const int calls = args.size() > 2 ? std::atoi(args[2].c_str()) : 12;
    if (const char* list = std::getenv("HETFLOW_LOOP_DEVICES"); list && *list)
      return compare_devices(split_commas(list), args[0], std::stoull(args[1]), calls, fast, profiling);
    ControllerOptions copts;
    copts.profiling = profiling;  // device chunks are timed by their kernels' profiling counters
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
    std::printf("%s on %s (%s), %d calls each, medians of the last %d%s\n", w->describe().c_str(),
                c.device().name.c_str(), c.device().platform_name.c_str(), calls, calls - calls / 3,
                profiling ? "" : ", no profiling (chunks timed by the host clock)");
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
