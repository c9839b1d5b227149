#pragma once
// The summary `hetflow report` prints from a Chrome trace written by to_trace_json (or any trace in
// that format): busy time per lane, overlap, idle gaps and the critical path. For the CLI and the
// tests; the runtime only writes traces (include/hetflow/trace.hpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hetflow {

struct LaneBusy {
  std::string lane;
  std::int64_t busy_ns = 0;  // union of the lane's intervals
  std::size_t events = 0;
  // The lane idle between two of its own events (between its merged intervals): how long a device
  // sat between a loop's chunks or a pipeline's commands. Nearest-rank percentiles; 0 with fewer
  // than two intervals. A lane idle for want of work counts too: read the median first.
  std::size_t gaps = 0;
  std::int64_t gap_median_ns = 0, gap_p90_ns = 0;
};

struct TimeInterval {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t length() const { return end_ns - start_ns; }
};

struct PathStep {
  std::uint64_t id = 0;  // the request's id (args.id), else the event's index in traceEvents
  std::string name, kind, lane;
  std::int64_t start_ns = 0, end_ns = 0;
};

// Times are nanoseconds on the trace's clock. Waits (events of kind "wait", the user thread
// blocking) are not work: they count in waiting_ns only, never in lanes, overlap or gaps.
struct TraceSummary {
  std::string device, policy;           // from otherData, when the trace says
  std::string from;                     // the event the window starts at ("": the whole trace)
  std::int64_t first_start_ns = 0;      // earliest start of any work event
  std::int64_t last_end_ns = 0;         // latest end of any work event
  std::int64_t wall_ns = 0;             // last_end_ns - first_start_ns
  std::vector<LaneBusy> lanes;          // in track order
  std::int64_t busy_ns = 0;             // time at least one lane was busy
  std::int64_t overlap_ns = 0;          // time two or more lanes were busy at once
  std::vector<TimeInterval> idle_gaps;  // no lane busy, between first start and last end
  std::int64_t idle_ns = 0, largest_idle_ns = 0;
  std::int64_t waiting_ns = 0;  // union of the wait events
  // The longest path through the edges, by the sum of its events' durations.
  std::vector<PathStep> critical_path;
  std::int64_t critical_path_ns = 0;
  double critical_path_share = 0.0;  // critical_path_ns / wall_ns (0 when wall_ns is 0)
  bool edges_from_flows = false;     // no embedded dump: edges were rebuilt from the flow arrows
};

// Summarises a trace: the object form {"traceEvents": [...]} or the bare array form. Edges come
// from the embedded "hetflow" dump when there is one, else from the "s"/"f" flow events (each
// bound to the X event enclosing its timestamp on its track). Throws Error saying what is wrong.
// With `from`, only the events that start at or after the first event of that name count (a
// pipeline's steady state, its warm-up left out); no event of that name is an Error.
TraceSummary summarize_trace(const std::string& trace_json, const std::string& from = {});
// summarize_trace on a file's contents; errors name the file.
TraceSummary summarize_trace_file(const std::string& path, const std::string& from = {});

// The summary as JSON (`hetflow report --json`).
std::string to_json(const TraceSummary& summary);

}  // namespace hetflow
