// perf/peers: the Barnes-Hut force loop of bench_loops on StarPU, cut into chunks, each a task of one
// codelet with a CPU and an OpenCL implementation, StarPU balancing them itself, against hetflow's
// parallel_for, in one process, interleaved round by round, on the same device (issue 17):
//   hetflow logfit       parallel_for with LogFit, both sides: the row the others are divided by
//   hetflow device only  one chunk of N on the device
//   hetflow cpu only     dynamic:CHUNK on the CPU workers
//   hetflow dynamic      dynamic:CHUNK on both sides: the same cut as StarPU's tasks, taken in order
//   StarPU <sched>       perf/peers/starpu_workloads.* barnes_hut, once per scheduler; a fresh
//                        StarPU per round (a process holds one at a time, its policy fixed at start)
//   bench_peers_loops barneshut N [STEPS=9] [CHUNK=max(64, N/64)] [ROUNDS=3] [SCHEDULERS=dmda,eager]
//                     [--fast-math]
// A round runs STEPS loop calls of every row, over the first step's tree as bench_loops does;
// round 0 is a warm-up left out of the medians (LogFit explores, the dm* schedulers calibrate their
// performance models, kept in STARPU_HOME). The median is over the timed calls of the other rounds,
// each from its start to every chunk's result in host memory. HETFLOW_DEVICE picks the device of
// both; STARPU_SCHED, when set, is the only scheduler tried. Each row's last call of each round is
// checked against the sequential walk within the kernel's tolerance (BarnesHutLoop::check); the
// exit status is 1 if one is not within it.
#include <hetflow/hetflow.hpp>
#include <hetflow/parallel_for.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "bench_timing.hpp"
#include "native/native_workloads.hpp"
#include "peers/starpu_workloads.hpp"
#include "workloads/barnes_hut_loop.hpp"

using namespace hetflow;

namespace {

// A whole decimal number of at most `max`, or a UsageError naming the argument.
std::size_t number(const std::string& what, const std::string& text, std::size_t max) {
  std::size_t value = 0, used = 0;
  try {
    if (!text.empty() && text[0] != '-') value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value > max)
    throw UsageError(what + " must be a whole number up to " + std::to_string(max) + " (got '" + text + "')");
  return value;
}

struct Row {
  std::string label;
  std::vector<double> seconds{};  // the timed rounds' calls
  double device_share = 0;        // over the last round's calls
  double max_rel_error = 0;       // over every round's last call
  bool ok = true;
  std::string first_failure{};
  void checked(const workloads::LoopCheck& check, int round) {
    max_rel_error = std::max(max_rel_error, check.max_rel_error);
    if (check.ok() || !ok) return;
    ok = false;
    first_failure = label + ", round " + std::to_string(round) + ": " + check.str();
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool fast = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--fast-math")
      fast = true;
    else
      args.emplace_back(argv[i]);
  }
  if (args.size() < 2 || args[0] != "barneshut") {
    std::fprintf(stderr,
                 "usage: %s barneshut N [STEPS=9] [CHUNK=max(64, N/64)] [ROUNDS=3] [SCHEDULERS=dmda,eager] "
                 "[--fast-math]\n",
                 argv[0]);
    return 2;
  }
  try {
    constexpr std::size_t int_max = std::numeric_limits<int>::max();
    const std::size_t n = number("N", args[1], std::numeric_limits<std::size_t>::max());
    const int steps = args.size() > 2 ? int(number("STEPS", args[2], int_max)) : 9;
    const std::size_t asked_chunk = args.size() > 3 ? number("CHUNK", args[3], n) : 0;  // 0: the default
    const std::size_t chunk = asked_chunk ? asked_chunk : std::max<std::size_t>(64, n / 64);
    const int rounds = args.size() > 4 ? int(number("ROUNDS", args[4], int_max)) : 3;
    std::vector<std::string> schedulers =
        args.size() > 5 ? bench::split_list(args[5]) : std::vector<std::string>{"dmda", "eager"};
    if (const char* env = std::getenv("STARPU_SCHED"); env && *env) schedulers = {env};
    if (n == 0 || steps <= 0 || rounds <= 0 || schedulers.empty())
      throw UsageError("N, STEPS and ROUNDS must be positive and SCHEDULERS not empty");

    ControllerOptions copts;
    copts.profiling = true;  // LogFit times device chunks by their kernels' profiling counters
    Controller c(copts);
    workloads::BarnesHutLoop::Params params;
    params.n = n;
    params.fast_math = fast;
    workloads::BarnesHutLoop w(c, params);
    w.before_step();
    const std::vector<float> ref = w.reference();
    const std::string kernels = native::kernel_dir(HETFLOW_SOURCE_KERNEL_DIR_FOR_BENCH);

    struct HetflowRow {
      std::string scheduler;
      bool cpu = true, device = true;
    };
    const std::string dynamic = "dynamic:" + std::to_string(chunk);
    const std::vector<std::pair<std::string, HetflowRow>> hetflow_rows = {
        {"hetflow logfit", {"logfit"}},
        {"hetflow device only", {"dynamic:" + std::to_string(n), false, true}},
        {"hetflow cpu only", {dynamic, true, false}},
        {"hetflow " + dynamic, {dynamic}}};
    std::vector<Row> rows;
    std::vector<std::unique_ptr<HeteroLoop>> loops;
    for (const auto& [label, h] : hetflow_rows) {
      LoopBody b;
      if (h.cpu) b.cpu = [&w](Chunk ch) { w.cpu(ch.begin, ch.end); };
      if (h.device) b.device = [&w](Controller& ctl, Chunk ch) { w.device(ctl, ch.begin, ch.end); };
      b.reads = w.reads();
      b.writes = [&w](Chunk ch) { return w.writes(ch.begin, ch.end); };
      loops.push_back(std::make_unique<HeteroLoop>(c, std::move(b), LoopOptions{.scheduler = h.scheduler}));
      rows.push_back({label});
    }
    for (const auto& s : schedulers) {
      peers::Starpu check(c.device(), s);  // an unknown one is reported now, not after the first round
      rows.push_back({"StarPU " + s});
    }

    std::string starpu_description;
    for (int round = 0; round <= rounds; ++round) {
      std::vector<std::vector<double>> t(rows.size());
      for (std::size_t i = 0; i < loops.size(); ++i) {
        std::size_t device_iterations = 0;
        for (int call = 0; call < steps; ++call) {
          w.clear_output();
          const LoopReport r = (*loops[i])(n);
          t[i].push_back(r.seconds);
          device_iterations += r.sides[1].iterations;
        }
        rows[i].device_share = double(device_iterations) / double(n * std::size_t(steps));
        rows[i].checked(w.check(ref), round);
      }
      for (std::size_t s = 0; s < schedulers.size(); ++s) {
        Row& row = rows[loops.size() + s];
        peers::Starpu sp(c.device(), schedulers[s]);
        starpu_description = sp.description();
        const auto r = peers::barnes_hut(sp, w, {chunk, steps, peers::LoopSides::both, kernels});
        t[loops.size() + s] = r.seconds;
        row.device_share = double(r.device_iterations) / double(n * std::size_t(steps));
        row.checked(w.check(r.output.data(), ref), round);
      }
      std::fprintf(stderr, "  round %d%s, median call:", round, round == 0 ? " (warm-up)" : "");
      for (const auto& x : t) std::fprintf(stderr, " %.4f", bench::median(x));
      std::fprintf(stderr, "\n");
      if (round == 0) continue;
      for (std::size_t i = 0; i < rows.size(); ++i)
        rows[i].seconds.insert(rows[i].seconds.end(), t[i].begin(), t[i].end());
    }

    const std::size_t nchunks = (n + chunk - 1) / chunk;
    std::printf(
        "barneshut, %zu bodies%s, %d calls per round, chunks of %zu (%zu), on %s (%s), median call of %d "
        "rounds after a warm-up round\n",
        n, fast ? " (fast math)" : "", steps, chunk, nchunks, c.device().name.c_str(), c.device().platform_name.c_str(),
        rounds);
    std::printf("%s; its scheduler per row\n", starpu_description.c_str());
    std::printf("%-22s %10s %9s %13s %12s %6s\n", "runtime", "median s", "/logfit", "device share", "max rel err",
                "check");
    const double logfit_s = bench::median(rows[0].seconds);
    bool all_ok = true;
    for (const Row& row : rows) {
      const double s = bench::median(row.seconds);
      std::printf("%-22s %10.4f %9.2f %12.1f%% %12.2e %6s\n", row.label.c_str(), s, s / logfit_s,
                  100 * row.device_share, row.max_rel_error, row.ok ? "ok" : "WRONG");
      all_ok = all_ok && row.ok;
    }
    std::printf(
        "(/logfit: the row's median call over hetflow LogFit's, above 1 slower; device share: of the last round's "
        "iterations; check: every round's last call against the sequential walk, within %.0e of the RMS "
        "acceleration)\n",
        fast ? workloads::BarnesHutLoop::kTreeTolerance : workloads::BarnesHutLoop::kExactTolerance);
    for (const Row& row : rows)
      if (!row.ok) std::printf("WRONG: %s\n", row.first_failure.c_str());
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_peers_loops: %s\n", e.what());
    return 1;
  }
}
