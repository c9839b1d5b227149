// Chrome trace-event JSON of a run (docs/architecture.md, "Dumps and traces"). Its summary, what
// `hetflow report` prints, is the tools' (tools/analysis/trace_summary.cpp).
#include <hetflow/controller.hpp>
#include <hetflow/errors.hpp>
#include <hetflow/trace.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "json_text.hpp"

namespace hetflow {

using nlohmann::json;
// Written with the trace format's usual field order (ph, name, ...); read in any order.
using ojson = nlohmann::ordered_json;

namespace {

constexpr int trace_pid = 1;

struct TimeInterval {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t length() const { return end_ns - start_ns; }
};

// Track ids fix the order Perfetto shows the lanes in: transfers, device queues, host workers,
// then the user thread's waits.
int lane_tid(const std::string& lane, std::map<std::string, int>& others) {
  auto numbered = [&](const char* prefix, int base) -> std::optional<int> {
    const std::string p = prefix;
    if (lane.size() <= p.size() || lane.compare(0, p.size(), p) != 0) return std::nullopt;
    const std::string digits = lane.substr(p.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) || digits.size() > 6)
      return std::nullopt;
    return base + std::stoi(digits);
  };
  if (lane == "H2D") return 1;
  if (lane == "D2H") return 2;
  if (lane == "queue") return 3;
  if (auto k = numbered("kernel", 10)) return *k;
  if (lane == "host") return 99'999;
  if (auto h = numbered("host", 100'000)) return *h;
  if (lane == "wait") return 2'000'000;
  auto [it, added] = others.emplace(lane, 3'000'000 + int(others.size()));
  (void)added;
  return it->second;
}

double to_us(std::int64_t ns) { return double(ns) / 1000.0; }

// The interval a record occupies on its track, if it has one. A wait has no start of its own:
// it spans from its submission, when its caller started blocking.
std::optional<TimeInterval> track_interval(const RequestRecord& r) {
  const std::int64_t start = r.start_ns >= 0 ? r.start_ns : (r.kind == "wait" ? r.submit_ns : -1);
  if (start < 0 || r.end_ns < start) return std::nullopt;
  return TimeInterval{start, r.end_ns};
}

// Where a record was drawn: its track and the interval it covers there.
struct Placement {
  int tid = 0;
  TimeInterval interval;
};

// The requests' slices in time order, and where each request landed: the hazard arrows attach there.
struct Slices {
  // Each slice's text as written, with its start: a document of every event at once took ~10
  // bytes of memory for each byte written (50,000 requests: 940 MB for an 87 MB trace).
  std::vector<std::pair<double, std::string>> events;
  std::map<int, std::string> tracks;                    // tid → lane
  std::unordered_map<std::uint64_t, Placement> placed;  // request id → where
};

ojson slice_args(const RequestRecord& r, const std::map<std::uint32_t, std::string>& flow_node_names) {
  ojson args{{"id", r.id}, {"kind", r.kind}, {"status", r.status}, {"lane", r.lane}};
  if (!r.error.empty()) args["error"] = r.error;
  if (r.submit_ns >= 0) args["submit_ns"] = r.submit_ns;
  if (r.enqueue_ns >= 0) args["enqueue_ns"] = r.enqueue_ns;
  if (auto n = flow_node_names.find(r.flow_node); n != flow_node_names.end()) args["flow_node"] = n->second;
  return args;
}

Slices request_slices(const std::vector<RequestRecord>& records, const GraphInfo& info) {
  std::map<std::string, int> other_lanes;
  std::map<std::uint32_t, std::string> flow_node_names;
  for (const auto& n : info.flow_nodes) flow_node_names[n.id] = n.kind + " '" + n.name + "'";
  Slices s;
  for (const auto& r : records) {
    const auto iv = track_interval(r);
    if (!iv) continue;
    const int tid = lane_tid(r.lane, other_lanes);
    s.tracks.emplace(tid, r.lane);
    s.placed.emplace(r.id, Placement{tid, *iv});
    s.events.emplace_back(to_us(iv->start_ns), detail::json_text(ojson{{"ph", "X"},
                                                                       {"name", r.name},
                                                                       {"cat", r.kind},
                                                                       {"pid", trace_pid},
                                                                       {"tid", tid},
                                                                       {"ts", to_us(iv->start_ns)},
                                                                       {"dur", to_us(iv->length())},
                                                                       {"args", slice_args(r, flow_node_names)}}));
  }
  std::stable_sort(s.events.begin(), s.events.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return s;
}

// `emit` takes each event's object in turn.
template <class Emit>
void append_track_names(Emit&& emit, const GraphInfo& info, const std::map<int, std::string>& tracks) {
  std::string process = "hetflow";
  if (!info.device.empty()) process += " — " + info.device;
  if (!info.policy.empty()) process += " (" + info.policy + ")";
  emit(ojson{{"ph", "M"}, {"name", "process_name"}, {"pid", trace_pid}, {"tid", 0}, {"args", {{"name", process}}}});
  for (const auto& [tid, lane] : tracks) {
    emit(ojson{{"ph", "M"}, {"name", "thread_name"}, {"pid", trace_pid}, {"tid", tid}, {"args", {{"name", lane}}}});
    emit(ojson{
        {"ph", "M"}, {"name", "thread_sort_index"}, {"pid", trace_pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  }
}

// One arrow per hazard edge. Each end sits in the middle of its slice, where binding to the
// enclosing slice cannot pick a neighbour that starts or ends at the same instant.
template <class Emit>
void append_hazard_arrows(Emit&& emit, const std::vector<RequestRecord>& records,
                          const std::unordered_map<std::uint64_t, Placement>& placed) {
  std::uint64_t flow_id = 0;
  for (const auto& r : records)
    for (const auto& e : r.in_edges) {
      auto from = placed.find(e.from), to = placed.find(e.to);
      if (from == placed.end() || to == placed.end()) continue;
      const auto mid = [](const TimeInterval& iv) { return to_us(iv.start_ns) + to_us(iv.length()) / 2.0; };
      const std::string name = e.hazard + " " + e.tile;
      const ojson args{
          {"from_slot", e.from_slot}, {"to_slot", e.to_slot}, {"image", e.image}, {"region", e.region.str(e.dims)}};
      ++flow_id;
      emit(ojson{{"ph", "s"},
                 {"id", flow_id},
                 {"name", name},
                 {"cat", "hazard"},
                 {"pid", trace_pid},
                 {"tid", from->second.tid},
                 {"ts", mid(from->second.interval)},
                 {"args", args}});
      emit(ojson{{"ph", "f"},
                 {"bp", "e"},
                 {"id", flow_id},
                 {"name", name},
                 {"cat", "hazard"},
                 {"pid", trace_pid},
                 {"tid", to->second.tid},
                 {"ts", mid(to->second.interval)},
                 {"args", args}});
    }
}

}  // namespace

std::string to_trace_json(const std::vector<RequestRecord>& records, const GraphInfo& info) {
  const Slices slices = request_slices(records, info);
  // Key order matters: Perfetto's JSON reader wants displayTimeUnit first and stops reading at
  // the first top-level key it does not know, so the embedded dump goes last. One event a line.
  const ojson other{{"format", "hetflow-trace"}, {"version", "1"}, {"device", info.device}, {"policy", info.policy}};
  std::string out =
      "{\"displayTimeUnit\": \"ms\",\n\"otherData\": " + detail::json_text(other) + ",\n\"traceEvents\": [";
  bool first = true;
  const auto emit_text = [&](const std::string& text) {
    out += first ? "\n" : ",\n";
    out += text;
    first = false;
  };
  const auto emit = [&](const ojson& event) { emit_text(detail::json_text(event)); };
  append_track_names(emit, info, slices.tracks);
  for (const auto& [ts, text] : slices.events) emit_text(text);
  append_hazard_arrows(emit, records, slices.placed);
  out += "\n],\n\"hetflow\": " + to_json(records, info) + "}\n";
  return out;
}

void write_trace(const Controller& c, const std::string& path) {
  if (!c.recording())
    throw UsageError(
        "write_trace: the controller does not record its requests (set ControllerOptions::record, or HETFLOW_DUMP or "
        "HETFLOW_TRACE before creating it)");
  detail::write_text_file(path, to_trace_json(c.records(), graph_info(c)), "trace");
}

}  // namespace hetflow
