// `hetflow report`: what a trace says about overlap — busy time per lane, time with two or more
// lanes busy, idle gaps and the critical path.
#include <hetflow/errors.hpp>
#include <hetflow/trace.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "analysis/trace_summary.hpp"
#include "dump_report_commands.hpp"
#include "numbers.hpp"

namespace hetflow::cli {
namespace {

std::string ms(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", double(ns) / 1e6);
  return buf;
}

std::string us(std::int64_t ns) {  // 11 characters: µs below 10 ms, else ms
  char buf[32];
  if (ns < 10'000'000)
    std::snprintf(buf, sizeof buf, "%8.1f us", double(ns) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%8.1f ms", double(ns) / 1e6);
  return buf;
}

double percent(std::int64_t part, std::int64_t whole) { return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0; }

struct ReportArgs {
  std::string file;
  bool json = false;
  std::size_t gaps = 3;
  std::size_t path_steps = 20;  // a long run's path has thousands: the first steps, then how to see the rest
  std::string from;
};

void run_report(const ReportArgs& a) {
  const TraceSummary s = summarize_trace_file(a.file, a.from);
  if (a.json) {
    std::fputs(to_json(s).c_str(), stdout);
    return;
  }
  std::printf("%s", a.file.c_str());
  if (!s.device.empty() || !s.policy.empty()) std::printf(" — %s (%s)", s.device.c_str(), s.policy.c_str());
  std::printf("\n");
  if (s.lanes.empty()) {
    std::printf("no timed requests in this trace\n");
    return;
  }
  if (!s.from.empty()) std::printf("from '%s' on (events that started before it left out)\n", s.from.c_str());
  std::printf("wall time      %12s  (first start to last end)\n", ms(s.wall_ns).c_str());
  // gaps: the lane idle between two of its own events (a device between a loop's chunks, say).
  std::printf("lane                   busy   of wall  events    gaps  median gap     p90 gap\n");
  for (const auto& l : s.lanes) {
    std::printf("  %-12s %12s  %6.1f %%  %6zu", l.lane.c_str(), ms(l.busy_ns).c_str(), percent(l.busy_ns, s.wall_ns),
                l.events);
    if (l.gaps > 0) std::printf("  %6zu %11s %11s", l.gaps, us(l.gap_median_ns).c_str(), us(l.gap_p90_ns).c_str());
    std::printf("\n");
  }
  std::printf("busy (any)     %12s  %6.1f %%\n", ms(s.busy_ns).c_str(), percent(s.busy_ns, s.wall_ns));
  std::printf("overlap        %12s  %6.1f %%  (two or more lanes busy at once)\n", ms(s.overlap_ns).c_str(),
              percent(s.overlap_ns, s.wall_ns));
  std::printf("idle gaps      %zu, total %s (%.1f %%), largest %s\n", s.idle_gaps.size(), ms(s.idle_ns).c_str(),
              percent(s.idle_ns, s.wall_ns), ms(s.largest_idle_ns).c_str());
  if (a.gaps > 0 && !s.idle_gaps.empty()) {
    auto gaps = s.idle_gaps;
    std::sort(gaps.begin(), gaps.end(),
              [](const TimeInterval& x, const TimeInterval& y) { return x.length() > y.length(); });
    gaps.resize(std::min(gaps.size(), a.gaps));
    for (const auto& g : gaps)
      std::printf("  %12s  at %s .. %s\n", ms(g.length()).c_str(), ms(g.start_ns - s.first_start_ns).c_str(),
                  ms(g.end_ns - s.first_start_ns).c_str());
  }
  if (s.waiting_ns > 0)
    std::printf("waiting        %12s  (the user thread blocked in wait / wait_all)\n", ms(s.waiting_ns).c_str());
  std::printf("critical path  %zu requests, %s = %.1f %% of wall time%s\n", s.critical_path.size(),
              ms(s.critical_path_ns).c_str(), 100.0 * s.critical_path_share,
              s.edges_from_flows ? " (edges from the trace's flow arrows)" : "");
  const std::size_t shown = std::min(s.critical_path.size(), a.path_steps);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& p = s.critical_path[i];
    std::printf("  #%-6llu %-28s %-9s %12s\n", static_cast<unsigned long long>(p.id), p.name.c_str(), p.lane.c_str(),
                ms(p.end_ns - p.start_ns).c_str());
  }
  if (shown < s.critical_path.size())
    std::printf("  ... %zu more step%s (--path-steps %zu lists them all)\n", s.critical_path.size() - shown,
                s.critical_path.size() - shown == 1 ? "" : "s", s.critical_path.size());
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "Summarise a trace: busy time per lane, overlap, idle gaps, critical path");
  cmd->add_option("trace", args->file, "Chrome trace written by hetflow (HETFLOW_TRACE)")->required();
  cmd->add_flag("--json", args->json, "Print the summary as JSON");
  cmd->add_option("--gaps", args->gaps, "How many of the largest idle gaps to list")
      ->capture_default_str()
      ->transform(whole_number(0, SIZE_MAX));
  cmd->add_option("--path-steps", args->path_steps,
                  "How many steps of the critical path to list, from its start (--json lists them all)")
      ->capture_default_str()
      ->transform(whole_number(0, SIZE_MAX));
  cmd->add_option("--from", args->from,
                  "Summarise from the first event of this name on, e.g. \"generate frame 0\" (a pipeline's "
                  "timed part, its warm-up left out)");
  cmd->callback([args] { run_report(*args); });
}

}  // namespace hetflow::cli
