// `hetflow run WORKLOAD`: the papers' workloads on the chosen device under sync and/or async, with
// time, throughput and the async gain, optionally verified against the CPU reference.
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>

#include "commands.hpp"
#include "numbers.hpp"
#include "removed_on_signal.hpp"
#include "text_checks.hpp"
#include "run_loop.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"
#include "workloads/loop_registry.hpp"
#include "workloads/pipelines.hpp"
#include "workloads/sobel_flow.hpp"
#include "workloads/sobel_sizing.hpp"

namespace hetflow::cli {
namespace {

struct RunOptions {
  std::string workload = "sobel";
  std::string size;
  int frames = 0;      // frames (sobel) or iterations/products (jacobi, matpow); 0 = the workload's default
  std::string policy;  // empty: HETFLOW_POLICY's, else both
  std::string device;
  std::string devices;         // loops over several devices: comma-separated selections
  unsigned kernel_queues = 0;  // 0: HETFLOW_KERNEL_QUEUES's, else 1
  int slots = 0;               // sobel: 0 = workloads::kDefaultSobelSlots
  int host_threads = 0;        // sobel: 0 = the cores the device leaves free
  std::string dump, trace, input, output;
  bool verify = false;
  bool flow_graph = false;           // sobel: the pipeline as a tbb::flow::graph of hetflow's nodes
  int repeat = 0;                    // runs per policy, alternating; 0: 3 when comparing both policies, else 1
  std::string scheduler = "logfit";  // the loop workloads
  unsigned cpu_workers = 0;
  unsigned device_slots = 0;  // 0: LoopOptions' default
  bool fast_math = false;
};

bool is_loop(const std::string& workload) {
  return workload == "mandelbrot" || workload == "nbody" || workload == "spmv" || workload == "barneshut";
}

void run_loop_workload(const RunOptions& o) {
  LoopRunOptions l;
  l.workload = o.workload;
  l.device = o.device;
  if (!o.devices.empty()) l.devices = split_list("--devices", o.devices);
  l.scheduler = o.scheduler;
  l.cpu_workers = o.cpu_workers;
  l.device_slots = o.device_slots;
  l.fast_math = o.fast_math;
  l.verify = o.verify;
  l.dump = o.dump;
  l.trace = o.trace;
  l.kernel_queues = o.kernel_queues;
  if (o.policy == "both") throw UsageError("--policy both: a loop runs under one policy, sync or async");
  if (!o.policy.empty()) l.policy = parse_policy(o.policy);  // else the controllers' default (HETFLOW_POLICY)
  if (o.frames > 0) l.calls = o.frames;
  if (!o.size.empty()) {
    const auto range = workloads::loop_size_range(o.workload);
    const auto n = parse_whole_number(o.size, range.min, range.max);
    if (!n)
      throw UsageError("--size '" + o.size + "': " + o.workload + " takes " + range.what + ", " +
                       whole_number_range(range.min, range.max));
    l.size = std::size_t(*n);
  }
  run_loop(l);
}

// "4k" / "8k" / "16k" (the papers' frames), "WxH", or one number N (N×N).
std::pair<int, int> parse_size(const std::string& text, std::pair<int, int> fallback) {
  static const std::map<std::string, std::pair<int, int>> named = {{"720p", {1280, 720}},
                                                                   {"1080p", {1920, 1080}},
                                                                   {"4k", {4096, 2160}},
                                                                   {"8k", {7680, 4320}},
                                                                   {"16k", {15360, 8640}}};
  if (text.empty()) return fallback;
  if (auto it = named.find(text); it != named.end()) return it->second;
  const auto x = text.find_first_of("xX");
  const auto w = parse_whole_number(text.substr(0, x), 1, INT_MAX);
  const auto h = x == std::string::npos ? w : parse_whole_number(text.substr(x + 1), 1, INT_MAX);
  if (w && h) return {int(*w), int(*h)};
  throw UsageError("--size '" + text + "' is not 720p, 1080p, 4k, 8k, 16k, WxH or N (W, H and N each " +
                   whole_number_range(1, INT_MAX) + ")");
}

struct Outcome {
  Policy policy;
  workloads::RunResult result;
};

void verify(const RunOptions& o, int width, int height, int steps, const workloads::RunResult& r) {
  std::vector<float> ref;
  double err = 0;
  if (o.workload == "sobel") {
    std::vector<float> frame(std::size_t(width) * std::size_t(height));
    if (!o.input.empty()) {
      workloads::Y4mReader reader(o.input);
      for (int i = 0; i < r.frames; ++i) reader.read_luma(frame.data());
    } else {
      workloads::generate_frame(frame.data(), width, height, r.frames - 1);
    }
    ref.resize(frame.size());
    workloads::sobel_reference(frame.data(), ref.data(), width, height);
  } else if (o.workload == "jacobi") {
    workloads::jacobi_initial_grid(ref, width);
    workloads::jacobi_reference(ref, width, steps);
  } else {
    std::vector<float> a, tmp(std::size_t(width) * std::size_t(width));
    workloads::matpow_input(a, width);
    ref = a;
    for (int k = 0; k < steps; ++k) {
      workloads::matmul_reference(ref.data(), a.data(), tmp.data(), width);
      ref.swap(tmp);
    }
  }
  err = workloads::max_rel_error(r.output, ref);
  const double tolerance = o.workload == "matpow" ? 1e-3 : 1e-5;
  std::printf("verify: max relative error %.3g against the CPU reference (tolerance %.0e): %s\n", err, tolerance,
              err <= tolerance ? "ok" : "MISMATCH");
  if (!(err <= tolerance)) throw Error(o.workload + ": the result differs from the CPU reference");
}

bool is_sobel(const RunOptions& o) { return o.workload == "sobel"; }

std::vector<Policy> policies_to_run(const RunOptions& o) {
  std::string policy = o.policy;
  if (const char* env = std::getenv("HETFLOW_POLICY"); policy.empty() && env && *env) policy = env;  // checked in main
  if (policy.empty() || policy == "both") return {Policy::sync, Policy::async};
  return {parse_policy(policy)};
}

// Frames of width × height (sobel) or an n × n grid or matrix; steps are frames, iterations or products.
struct ProblemSize {
  int width, height, steps;
};

ProblemSize problem_size(const RunOptions& o) {
  // Sobel's default (1080p x 100) runs ~1-2 s per policy on a 2-core CPU device: long enough for
  // the gain to mean something, short enough for the demo to stay well under 20 s there.
  auto [width, height] = parse_size(o.size, is_sobel(o)              ? std::pair{1920, 1080}
                                            : o.workload == "jacobi" ? std::pair{1024, 1024}
                                                                     : std::pair{256, 256});
  // An --input's frames are all run unless --frames says how many (0: the workload counts them).
  const int steps = o.frames > 0                            ? o.frames
                    : is_sobel(o) && !o.input.empty()       ? 0
                    : is_sobel(o) || o.workload == "jacobi" ? 100
                                                            : 10;
  if (!is_sobel(o) && width != height) throw UsageError(o.workload + " needs a square size (N), got " + o.size);
  return {width, height, steps};
}

// `last`: the run whose edge frames are written.
workloads::RunResult run_sobel(Controller& c, const RunOptions& o, const ProblemSize& size, bool last) {
  const workloads::SobelRun sobel_run{size.width, size.height,   size.steps, o.input, last ? o.output : std::string(),
                                      o.slots,    o.host_threads};
  if (!o.flow_graph) return workloads::sobel(c, sobel_run);
  return workloads::sobel_flow_graph(c, sobel_run, o.slots > 0 ? o.slots : workloads::kDefaultSobelSlots);
}

workloads::RunResult run_workload(Controller& c, const RunOptions& o, const ProblemSize& size, bool last) {
  if (is_sobel(o)) return run_sobel(c, o, size, last);
  if (o.workload == "jacobi") return workloads::jacobi(c, size.width, size.steps);
  return workloads::matpow(c, size.width, size.steps);
}

// `last`: the run whose graph and timeline the dumps show, and whose edge frames are written.
workloads::RunResult run_once(const RunOptions& o, const ProblemSize& size, Policy policy, bool last,
                              std::string& device_name) {
  ControllerOptions copts;
  copts.device = o.device;
  copts.device_origin = "--device";
  copts.policy = policy;
  if (o.kernel_queues > 0) copts.kernel_queues = o.kernel_queues;
  // Every run records when dumps are asked for: a run that fails is the one to look at.
  if (!o.dump.empty() || !o.trace.empty()) copts.record = true;
  Controller c(copts);
  device_name = c.device().name + " (" + c.device().platform_name + ")";
  // Interrupted, the run would leave an --output cut off mid-frame, which a player reads as whole.
  std::optional<RemovedOnSignal> partial_output;
  if (last && is_sobel(o) && !o.output.empty()) partial_output.emplace(o.output);
  workloads::RunResult r = with_dumps_of_a_failure(
      c, o.dump, o.trace, [&] { return device_limits_are_the_runs([&] { return run_workload(c, o, size, last); }); });
  if (last) write_requested_dumps(c, o.dump, o.trace);
  return r;
}

// seconds[i]: outcomes[i]'s time in every round.
void keep_median_seconds(std::vector<Outcome>& outcomes, std::vector<std::vector<double>>& seconds) {
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    auto& t = seconds[i];
    std::sort(t.begin(), t.end());
    outcomes[i].result.seconds = t[t.size() / 2];
  }
}

std::vector<Outcome> run_rounds(const RunOptions& o, const ProblemSize& size, const std::vector<Policy>& policies,
                                int rounds, std::string& device_name) {
  std::vector<Outcome> outcomes;
  std::vector<std::vector<double>> seconds(policies.size());
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t pi = 0; pi < policies.size(); ++pi) {
      const Policy p = policies[pi];
      const bool last = round == rounds - 1 && pi == policies.size() - 1;
      workloads::RunResult r = run_once(o, size, p, last, device_name);
      seconds[pi].push_back(r.seconds);
      if (round == 0) {
        outcomes.push_back({p, std::move(r)});
      } else if (r.checksum != outcomes[pi].result.checksum) {
        throw Error(std::string(to_string(p)) + " run " + std::to_string(round + 1) +
                    " gave another result than the first");
      }
    }
  }
  keep_median_seconds(outcomes, seconds);
  return outcomes;
}

void print_setup(const RunOptions& o, const ProblemSize& size, const workloads::RunResult& first, int shown_steps,
                 const std::string& device_name, int rounds) {
  std::printf("hetflow run %s on %s\n", o.workload.c_str(), device_name.c_str());
  if (is_sobel(o) && o.input.empty())
    std::printf("%d frames of %dx%d (generated)", shown_steps, size.width, size.height);
  else if (is_sobel(o))
    std::printf("%d frames from %s", shown_steps, o.input.c_str());
  if (is_sobel(o))
    std::printf(", %d slot%s, host work on %d thread%s%s\n\n", first.slots, first.slots == 1 ? "" : "s",
                first.host_threads, first.host_threads == 1 ? "" : "s",
                o.flow_graph ? ", as a flow graph of hetflow's nodes" : "");
  else
    std::printf("n = %d, %d %s\n\n", size.width, size.steps, o.workload == "jacobi" ? "iterations" : "products");
  if (rounds > 1) std::printf("median of %d runs per policy, alternating\n", rounds);
}

void print_times(const RunOptions& o, const std::vector<Outcome>& outcomes, int shown_steps) {
  const char* unit = is_sobel(o) ? "frames/s" : o.workload == "jacobi" ? "iters/s" : "products/s";
  std::printf("%-8s %10s %12s %12s\n", "policy", "time s", unit, "async gain");
  std::optional<double> sync_time;
  for (const auto& oc : outcomes)
    if (oc.policy == Policy::sync) sync_time = oc.result.seconds;
  for (const auto& oc : outcomes) {
    std::string gain = "";
    if (oc.policy == Policy::async && sync_time) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * (*sync_time - oc.result.seconds) / *sync_time);
      gain = buf;
    }
    std::printf("%-8s %10.3f %12.2f %12s\n", to_string(oc.policy), oc.result.seconds, shown_steps / oc.result.seconds,
                gain.c_str());
  }
}

void check_sync_and_async_agree(const workloads::RunResult& a, const workloads::RunResult& b) {
  const bool same = a.checksum == b.checksum && a.output.size() == b.output.size() &&
                    workloads::count_bit_differences(a.output.data(), b.output.data(), a.output.size()) == 0;
  // Say what was compared: a short Jacobi run takes no snapshot, and its checksum alone (0) showed nothing.
  std::printf("sync and async results bit-identical: %s (%zu output values and the checksum %.17g compared)\n",
              same ? "yes" : "NO", b.output.size(), b.checksum);
  if (!same) throw Error("sync and async runs gave different results");
}

// A .y4m input's own size is the one the frames had.
void verify_last(const RunOptions& o, const ProblemSize& size, const workloads::RunResult& last) {
  auto [vw, vh] = std::pair{size.width, size.height};
  if (is_sobel(o) && !o.input.empty()) {
    workloads::Y4mReader reader(o.input);
    vw = reader.width();
    vh = reader.height();
  }
  verify(o, vw, vh, size.steps, last);
}

// Options only some workloads read: given to another, they would be ignored without a word.
void refuse_options_of_other_workloads(const CLI::App& cmd, const std::string& workload) {
  const bool loop = is_loop(workload), sobel = workload == "sobel";
  const bool fast_math = workload == "nbody" || workload == "barneshut";
  const struct {
    const char* option;
    bool applies;
    const char* which;
  } only[] = {{"--slots", sobel, "sobel"},
              {"--host-threads", sobel, "sobel"},
              {"--input", sobel, "sobel"},
              {"--output", sobel, "sobel"},
              {"--flow-graph", sobel, "sobel"},
              {"--scheduler", loop, "the loop workloads (mandelbrot, nbody, spmv, barneshut)"},
              {"--cpu-workers", loop, "the loop workloads (mandelbrot, nbody, spmv, barneshut)"},
              {"--device-slots", loop, "the loop workloads (mandelbrot, nbody, spmv, barneshut)"},
              {"--devices", loop, "the loop workloads (mandelbrot, nbody, spmv, barneshut)"},
              {"--fast-math", fast_math, "nbody and barneshut"},
              {"--repeat", !loop, "sobel, jacobi and matpow (a loop runs --calls times)"}};
  for (const auto& o : only)
    if (!o.applies && cmd.count(o.option) > 0)
      throw UsageError(std::string(o.option) + " is for " + o.which + "; " + workload + " does not read it");
}

// A path the run writes must not be one it reads or another it writes: the second would silently
// replace the first (and an output opened over its own input destroys the input before it is read).
// Paths are compared as the filesystem resolves them ("./a.json" is "a.json"), files that do not
// exist yet included, and --dump's Graphviz siblings count as files it writes.
void refuse_shared_paths(const RunOptions& o) {
  struct Written {
    const char* option;
    const std::string* given;
    std::string path;  // the file itself: the option's value, or a sibling written beside it
    const char* what;  // empty for the option's own file
  };
  std::vector<Written> written;
  if (!o.output.empty()) written.push_back({"--output", &o.output, o.output, ""});
  if (!o.dump.empty()) {
    written.push_back({"--dump", &o.dump, o.dump, ""});
    written.push_back({"--dump", &o.dump, dump_companion(o.dump, ".dot"), "its Graphviz DOT"});
    written.push_back({"--dump", &o.dump, dump_companion(o.dump, ".flow.dot"), "its flow graph's DOT"});
  }
  if (!o.trace.empty()) written.push_back({"--trace", &o.trace, o.trace, ""});
  auto resolved = [](const std::string& path) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
    return ec ? std::filesystem::path(path).lexically_normal() : p;
  };
  auto describe = [](const Written& w) {
    return std::string(w.option) + " '" + *w.given + "'" +
           (*w.what ? std::string(" (") + w.what + ", '" + w.path + "')" : "");
  };
  const auto input = o.input.empty() ? std::filesystem::path() : resolved(o.input);
  // HETFLOW_DUMP and HETFLOW_TRACE have each controller the run makes write a file: the variable's
  // own for the first to end, with the controller's number before the extension for the others
  // (docs/dump-schema.md). One of them named as --dump or --trace would lose a controller's file.
  auto written_by_env = [&](const std::filesystem::path& file) -> const char* {
    for (const char* variable : {"HETFLOW_DUMP", "HETFLOW_TRACE"}) {
      const char* value = std::getenv(variable);
      if (!value || !*value) continue;
      const auto env = resolved(value);
      if (file == env) return variable;
      const std::string stem = env.stem().string(), ext = env.extension().string(), name = file.filename().string();
      if (file.parent_path() != env.parent_path() || name.size() <= stem.size() + ext.size() + 1 ||
          name.compare(0, stem.size() + 1, stem + ".") != 0 || name.compare(name.size() - ext.size(), ext.size(), ext))
        continue;
      const std::string number = name.substr(stem.size() + 1, name.size() - stem.size() - 1 - ext.size());
      if (std::all_of(number.begin(), number.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return variable;
    }
    return nullptr;
  };
  for (std::size_t i = 0; i < written.size(); ++i) {
    const auto here = resolved(written[i].path);
    if (const char* variable = written_by_env(here))
      throw UsageError(describe(written[i]) + " is a file " + variable + "='" + std::getenv(variable) +
                       "' has a controller of this run write: one would overwrite the other (unset " + variable +
                       " or name another file)");
    if (!o.input.empty() && here == input)
      throw UsageError(describe(written[i]) + " is the --input file: it would be overwritten before it is read");
    for (std::size_t j = i + 1; j < written.size(); ++j) {
      if (std::string_view(written[j].option) == written[i].option || here != resolved(written[j].path)) continue;
      if (!*written[i].what && !*written[j].what)
        throw UsageError(std::string(written[i].option) + " and " + written[j].option + " name the same file ('" +
                         *written[i].given + "', '" + *written[j].given + "')");
      throw UsageError(describe(written[i]) + " and " + describe(written[j]) +
                       " are one file: one would overwrite the other");
    }
  }
}

// An --input decides the frames' size and holds so many of them: what says otherwise is refused,
// not overridden without a word.
void refuse_what_the_input_decides(const RunOptions& o) {
  if (o.input.empty()) return;
  if (!o.size.empty())
    throw UsageError("--size '" + o.size + "' and --input '" + o.input +
                     "': the frames' size comes from the file; leave --size out");
  if (o.frames > 0) {
    const int held = workloads::count_y4m_frames(o.input, o.frames);
    if (held < o.frames)
      throw UsageError("--frames " + std::to_string(o.frames) + ": --input '" + o.input + "' holds only " +
                       std::to_string(held) + " frame" + (held == 1 ? "" : "s") +
                       " (leave --frames out to run them all)");
  }
}

void run(const RunOptions& o) {
  if (!o.devices.empty() && !o.device.empty()) throw UsageError("give --device or --devices, not both");
  refuse_shared_paths(o);
  refuse_what_the_input_decides(o);
  if (is_loop(o.workload)) return run_loop_workload(o);
  const std::vector<Policy> policies = policies_to_run(o);
  const ProblemSize size = problem_size(o);

  std::string device_name;
  // Each policy runs `rounds` times, alternating with the other, and the median is reported: single
  // runs on a busy machine swing by ±20 % (perf/RESULTS.md), more than the gain being shown.
  const int rounds = o.repeat > 0 ? o.repeat : policies.size() > 1 ? 3 : 1;
  const std::vector<Outcome> outcomes = run_rounds(o, size, policies, rounds, device_name);

  const auto& first = outcomes.front().result;
  const int shown_steps = is_sobel(o) ? first.frames : size.steps;  // a .y4m input may hold fewer frames
  print_setup(o, size, first, shown_steps, device_name, rounds);
  print_times(o, outcomes, shown_steps);
  if (outcomes.size() == 2) check_sync_and_async_agree(outcomes[0].result, outcomes[1].result);
  if (o.verify) verify_last(o, size, outcomes.back().result);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run",
                                 "Run a workload of the papers (sobel, jacobi, matpow) under sync and async, or a loop "
                                 "balanced between the CPU and the device (mandelbrot, nbody, spmv, barneshut)");
  cmd->add_option("workload", o->workload, "sobel | jacobi | matpow | mandelbrot | nbody | spmv | barneshut")
      ->check(CLI::IsMember({"sobel", "jacobi", "matpow", "mandelbrot", "nbody", "spmv", "barneshut"}))
      ->capture_default_str();
  cmd->add_option("--scheduler", o->scheduler,
                  "loops: logfit | static:S (device share 0..1) | static:S1,S2 (one share per device) | dynamic:C "
                  "(chunk) | hguided | oracle (default logfit)");
  cmd->add_option("--cpu-workers", o->cpu_workers,
                  "loops: CPU chunks at once (most: the TBB threads less one, kept for the devices; default: that, "
                  "less two per device past the first)")
      ->transform(whole_number(1, 4096));
  cmd->add_option("--device-slots", o->device_slots,
                  "loops: device chunks in flight per device, the next one queued behind the one running so its "
                  "kernel overlaps that one's transfer back (default 1)")
      ->transform(whole_number(1, 8));
  cmd->add_flag("--fast-math", o->fast_math, "nbody, barneshut: the kernels built with -cl-fast-relaxed-math");
  cmd->add_option("--size", o->size,
                  "sobel: 720p|1080p|4k|8k|16k|WxH (default 1080p); jacobi, matpow: N (default 1024, 256); "
                  "mandelbrot: image side (1024); nbody, barneshut: bodies (16384, 100000); spmv: R-MAT scale (16)")
      ->check(non_empty());
  // One setting under four names, each its own option: CLI11 names an option in its errors by its
  // first name, and the user must read the name they typed.
  std::vector<CLI::Option*> steps;
  for (const auto& [name, what] : {std::pair{"--frames", "sobel: frames (default 100, or all of --input's)"},
                                   std::pair{"--iters", "jacobi: iterations (default 100)"},
                                   std::pair{"--products", "matpow: products (default 10)"},
                                   std::pair{"--calls", "loops: calls of the loop (default 5)"}})
    steps.push_back(cmd->add_option(name, o->frames,
                                    std::string(what) + "; --frames, --iters, --products and --calls are one setting")
                        ->transform(whole_number(1, INT_MAX)));
  for (auto* a : steps)
    for (auto* b : steps)
      if (a != b) a->excludes(b);
  cmd->add_option("--policy", o->policy, "sync | async | both (default: HETFLOW_POLICY, else both)")
      ->check(CLI::IsMember({"sync", "async", "both"}));
  cmd->add_option("--device", o->device,
                  "device selection (gpu, cpu, P:D or a name); default HETFLOW_DEVICE or the first GPU")
      ->check(non_empty());
  cmd->add_option("--devices", o->devices,
                  "loops: several devices, comma-separated selections (e.g. nvidia,portable), one controller each; "
                  "the loop's tiles are the first's")
      ->check(non_empty());
  cmd->add_option("--kernel-queues", o->kernel_queues,
                  "kernel queues under async (default: HETFLOW_KERNEL_QUEUES, else 1)")
      ->transform(whole_number(1, 64));
  cmd->add_option("--slots", o->slots,
                  "sobel: frame slots (input and output images) under async; default 4: a slot is held from a "
                  "frame's generation to its H2D (or D2H to consumption), so 2 + host work / copy time per frame "
                  "(19 / 10.5 ms for 16K on the H200 host) keeps the copies from waiting for host work; at 4K on hosts "
                  "with a large L3, 3 is faster (generation and sums then overlap less)")
      ->transform(whole_number(1, 1024));
  cmd->add_option("--host-threads", o->host_threads,
                  "sobel: threads for frame generation and sums; default: the cores the device leaves free (all on "
                  "a GPU, cores - compute units on a CPU device, at least 1)")
      ->transform(whole_number(1, 1024));
  cmd->add_option("--dump", o->dump,
                  "write the task graph of the last run (or of the run that failed) as JSON (and .dot beside it; loops "
                  "over several devices: each further device's as NAME.devD.json)")
      ->check(non_empty());
  cmd->add_option("--trace", o->trace,
                  "write the timeline of the last run (or of the run that failed) as Chrome trace-event JSON (loops "
                  "over several devices: each further device's beside it, NAME.devD.json)")
      ->check(non_empty());
  cmd->add_option("--input", o->input,
                  "sobel: read frames from a .y4m file (its luma plane); the file sets the size (no --size), "
                  "--frames N runs its first N (default: all; more than it holds is an error)")
      ->check(non_empty());  // a file that cannot be read is the run's failure (exit 1), said when opened
  cmd->add_option("--output", o->output,
                  "sobel: write the edge frames as .y4m (a run ended by SIGINT or SIGTERM removes the file rather "
                  "than leave it cut off mid-frame)")
      ->check(non_empty());
  cmd->add_option("--repeat", o->repeat,
                  "runs per policy, alternating, the median reported (default: 3 when comparing sync and async, "
                  "else 1)")
      ->transform(whole_number(1, 1000));
  cmd->add_flag("--flow-graph", o->flow_graph,
                "sobel: build the pipeline as a tbb::flow::graph of hetflow's nodes (include/hetflow/flow.hpp, "
                "tools/workloads/sobel_flow.cpp) instead of Controller calls; same results");
  cmd->add_flag("--verify", o->verify, "compare the last result with the CPU reference");
  cmd->callback([o, cmd] {
    refuse_options_of_other_workloads(*cmd, o->workload);
    const std::size_t unwritten_before = env_dump_failures();
    run(*o);
    // HETFLOW_DUMP / HETFLOW_TRACE are written as each controller ends, errors logged: a file that
    // could not be written fails the run as --dump's would.
    if (const std::size_t n = env_dump_failures() - unwritten_before)
      throw Error(std::to_string(n) +
                  " file(s) of HETFLOW_DUMP or HETFLOW_TRACE could not be written (the errors above "
                  "say which and why)");
  });
}

}  // namespace hetflow::cli
