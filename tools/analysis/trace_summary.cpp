// The summary `hetflow report` prints from a Chrome trace (busy time per lane, overlap, idle gaps,
// the critical path): for the CLI and the tests, not the runtime, which only writes traces.
#include "analysis/trace_summary.hpp"

#include <hetflow/dump.hpp>
#include <hetflow/errors.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "analysis/filtered_json.hpp"

namespace hetflow {

using nlohmann::json;

namespace {

std::int64_t to_ns(double us) { return std::llround(us * 1000.0); }

[[noreturn]] void bad(const std::string& what) { throw Error("not a valid Chrome trace: " + what); }

struct Slice {
  std::uint64_t id;
  std::string name, kind, lane;
  int tid;
  TimeInterval iv;
  bool work;  // waits are the user thread blocking, not work
};

std::vector<TimeInterval> merged(std::vector<TimeInterval> v) {
  std::sort(v.begin(), v.end(), [](const TimeInterval& a, const TimeInterval& b) { return a.start_ns < b.start_ns; });
  std::vector<TimeInterval> out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.start_ns <= out.back().end_ns)
      out.back().end_ns = std::max(out.back().end_ns, iv.end_ns);
    else
      out.push_back(iv);
  }
  return out;
}

std::int64_t total(const std::vector<TimeInterval>& v) {
  std::int64_t t = 0;
  for (const auto& iv : v) t += iv.length();
  return t;
}

// `key` of event `index` in µs; a time whose nanoseconds do not fit 64 bits (or start + dur then)
// is refused instead of wrapping into a negative wall time.
double number(const json& ev, const char* key, std::size_t index) {
  auto it = ev.find(key);
  if (it == ev.end() || !it->is_number())
    bad("traceEvents[" + std::to_string(index) + "] has no numeric \"" + key + "\"");
  const double us = it->get<double>();
  constexpr double limit_us = 4.0e15;  // ~127 years of ns, twice over, still below 2^63
  if (!(us >= -limit_us && us <= limit_us))
    bad("traceEvents[" + std::to_string(index) + "] has \"" + key + "\" " + it->dump() +
        " µs, out of range (at most 4e15)");
  return us;
}

bool is_id(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0); }

int tid_of(const json& ev) {
  auto it = ev.find("tid");
  return it != ev.end() && it->is_number_integer() ? it->get<int>() : 0;
}

// The slice of track `tid` enclosing `ts` (the innermost: the latest start), for flow events.
std::optional<std::size_t> enclosing(const std::vector<Slice>& slices, int tid, std::int64_t ts) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const auto& s = slices[i];
    if (s.tid != tid || ts < s.iv.start_ns || ts > s.iv.end_ns) continue;
    if (!best || s.iv.start_ns >= slices[*best].iv.start_ns) best = i;
  }
  return best;
}

}  // namespace

namespace {

// The trace's event array: the document itself, or its "traceEvents".
const json& trace_events(const json& doc) {
  if (doc.is_array()) return doc;
  if (!doc.is_object()) bad("the top level is neither an object nor an array of events");
  auto it = doc.find("traceEvents");
  if (it == doc.end() || !it->is_array()) bad("no \"traceEvents\" array");
  return *it;
}

// The complete ("X") events as slices, each on its lane (the thread_name metadata, or "tid N");
// `sort_index` collects the tracks' thread_sort_index metadata.
std::vector<Slice> read_slices(const json& events, std::map<int, std::string>& names, std::map<int, int>& sort_index) {
  std::vector<Slice> slices;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& ev = events[i];
    if (!ev.is_object()) bad("traceEvents[" + std::to_string(i) + "] is not an object");
    const std::string ph = ev.value("ph", "");
    if (ph == "M") {
      const json args = ev.value("args", json::object());
      if (ev.value("name", "") == "thread_name" && args.contains("name") && args["name"].is_string())
        names[tid_of(ev)] = args["name"].get<std::string>();
      if (ev.value("name", "") == "thread_sort_index" && args.contains("sort_index") &&
          args["sort_index"].is_number_integer())
        sort_index[tid_of(ev)] = args["sort_index"].get<int>();
      continue;
    }
    if (ph != "X") continue;
    const std::int64_t start = to_ns(number(ev, "ts", i));
    const std::int64_t dur = to_ns(number(ev, "dur", i));
    if (dur < 0) bad("traceEvents[" + std::to_string(i) + "] has a negative \"dur\"");
    const json args = ev.value("args", json::object());
    Slice s;
    s.id = args.contains("id") && is_id(args["id"]) ? args["id"].get<std::uint64_t>() : std::uint64_t(i);
    s.name = ev.value("name", "");
    s.kind = args.contains("kind") && args["kind"].is_string() ? args["kind"].get<std::string>() : ev.value("cat", "");
    s.tid = tid_of(ev);
    s.iv = {start, start + dur};
    s.work = s.kind != "wait";
    slices.push_back(std::move(s));
  }
  for (auto& s : slices) s.lane = names.count(s.tid) ? names[s.tid] : "tid " + std::to_string(s.tid);
  return slices;
}

// The lane's gaps between its merged intervals m: count, median and 90th percentile (nearest rank).
void lane_gaps(const std::vector<TimeInterval>& m, LaneBusy& lane) {
  std::vector<std::int64_t> gaps;
  for (std::size_t i = 1; i < m.size(); ++i) gaps.push_back(m[i].start_ns - m[i - 1].end_ns);
  lane.gaps = gaps.size();
  if (gaps.empty()) return;
  std::sort(gaps.begin(), gaps.end());
  const auto rank = [&](double p) { return gaps[std::size_t(std::ceil(p * double(gaps.size()))) - 1]; };
  lane.gap_median_ns = rank(0.5);
  lane.gap_p90_ns = rank(0.9);
}

// Busy time per lane, overlap (two lanes or more busy), wall time and idle gaps. False when no
// slice is work.
bool summarize_lanes(const std::vector<Slice>& slices, std::map<int, std::string>& names,
                     std::map<int, int>& sort_index, TraceSummary& sum) {
  // Per lane, in track order (sort index, then tid).
  std::map<std::pair<int, int>, std::vector<TimeInterval>> by_track;
  std::map<std::pair<int, int>, std::size_t> counts;
  std::vector<TimeInterval> waits;
  for (const auto& s : slices) {
    if (!s.work) {
      waits.push_back(s.iv);
      continue;
    }
    const auto key = std::make_pair(sort_index.count(s.tid) ? sort_index[s.tid] : s.tid, s.tid);
    by_track[key].push_back(s.iv);
    ++counts[key];
  }
  sum.waiting_ns = total(merged(waits));
  if (by_track.empty()) return false;

  // Overlap: sweep over every lane's merged intervals, counting busy lanes.
  std::vector<std::pair<std::int64_t, int>> sweep;
  std::vector<TimeInterval> all;
  for (auto& [key, ivs] : by_track) {
    const auto m = merged(ivs);
    sum.lanes.push_back(LaneBusy{names.count(key.second) ? names[key.second] : "tid " + std::to_string(key.second),
                                 total(m), counts[key]});
    lane_gaps(m, sum.lanes.back());
    for (const auto& iv : m) {
      sweep.emplace_back(iv.start_ns, +1);
      sweep.emplace_back(iv.end_ns, -1);
      all.push_back(iv);
    }
  }
  std::sort(sweep.begin(), sweep.end());  // at one instant, ends (-1) before starts (+1)
  int busy = 0;
  std::int64_t last = sweep.front().first;
  for (const auto& [t, delta] : sweep) {
    if (busy >= 2) sum.overlap_ns += t - last;
    busy += delta;
    last = t;
  }

  const auto busy_union = merged(all);
  sum.busy_ns = total(busy_union);
  sum.first_start_ns = busy_union.front().start_ns;
  sum.last_end_ns = busy_union.back().end_ns;
  sum.wall_ns = sum.last_end_ns - sum.first_start_ns;
  for (std::size_t i = 1; i < busy_union.size(); ++i) {
    const TimeInterval gap{busy_union[i - 1].end_ns, busy_union[i].start_ns};
    sum.idle_gaps.push_back(gap);
    sum.idle_ns += gap.length();
    sum.largest_idle_ns = std::max(sum.largest_idle_ns, gap.length());
  }
  return true;
}

// The edges between work slices: the embedded "hetflow" dump's when there is one, else the flow
// events' (each end in the slice enclosing it). Successor lists and in-degrees, by slice index.
struct SliceGraph {
  std::vector<std::vector<std::size_t>> succ;
  std::vector<std::size_t> indegree;
};
SliceGraph slice_edges(const json& doc, const json& events, const std::vector<Slice>& slices, TraceSummary& sum) {
  SliceGraph g{std::vector<std::vector<std::size_t>>(slices.size()), std::vector<std::size_t>(slices.size(), 0)};
  auto add_edge = [&](std::size_t a, std::size_t b) {
    if (a == b || !slices[a].work || !slices[b].work) return;
    g.succ[a].push_back(b);
    ++g.indegree[b];
  };
  const json* embedded = nullptr;
  if (doc.is_object())
    if (auto h = doc.find("hetflow");
        h != doc.end() && h->is_object() && h->contains("edges") && (*h)["edges"].is_array())
      embedded = &(*h)["edges"];
  if (embedded) {
    std::unordered_map<std::uint64_t, std::size_t> by_id;
    for (std::size_t i = 0; i < slices.size(); ++i)
      if (slices[i].work) by_id.emplace(slices[i].id, i);
    for (const auto& e : *embedded) {
      if (!e.is_object() || !e.contains("from") || !e.contains("to") || !is_id(e["from"]) || !is_id(e["to"]))
        bad("an edge of the embedded \"hetflow\" dump lacks integer \"from\"/\"to\"");
      auto a = by_id.find(e["from"].get<std::uint64_t>()), b = by_id.find(e["to"].get<std::uint64_t>());
      if (a != by_id.end() && b != by_id.end()) add_edge(a->second, b->second);
    }
    return g;
  }
  sum.edges_from_flows = true;
  std::map<std::string, std::pair<std::optional<std::size_t>, std::optional<std::size_t>>> flows;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& ev = events[i];
    const std::string ph = ev.value("ph", "");
    if (ph != "s" && ph != "f") continue;
    auto id = ev.find("id");
    if (id == ev.end()) bad("flow event traceEvents[" + std::to_string(i) + "] has no \"id\"");
    const std::string key = ev.value("cat", "") + "/" + (id->is_string() ? id->get<std::string>() : id->dump());
    const auto slice = enclosing(slices, tid_of(ev), to_ns(number(ev, "ts", i)));
    (ph == "s" ? flows[key].first : flows[key].second) = slice;
  }
  for (const auto& [key, ends] : flows)
    if (ends.first && ends.second) add_edge(*ends.first, *ends.second);
  return g;
}

// The longest path by summed durations over the work slices' edges, in Kahn's order; a cycle
// (only possible in a hand-made trace) is reported, not looped over.
void critical_path(const std::vector<Slice>& slices, SliceGraph g, TraceSummary& sum) {
  std::vector<std::size_t> order, ready;
  for (std::size_t i = 0; i < slices.size(); ++i)
    if (slices[i].work && g.indegree[i] == 0) ready.push_back(i);
  std::vector<std::int64_t> best(slices.size(), 0);
  std::vector<std::optional<std::size_t>> prev(slices.size());
  while (!ready.empty()) {
    const std::size_t u = ready.back();
    ready.pop_back();
    order.push_back(u);
    best[u] += slices[u].iv.length();
    // best[v] is the longest path ending at one of v's predecessors until v itself is taken.
    for (std::size_t v : g.succ[u]) {
      if (!prev[v] || best[u] > best[v]) {
        best[v] = best[u];
        prev[v] = u;
      }
      if (--g.indegree[v] == 0) ready.push_back(v);
    }
  }
  const auto work_count =
      std::size_t(std::count_if(slices.begin(), slices.end(), [](const Slice& s) { return s.work; }));
  if (order.size() != work_count) bad("its edges form a cycle");
  std::size_t end = order.front();
  for (std::size_t u : order)
    if (best[u] > best[end]) end = u;
  sum.critical_path_ns = best[end];
  for (std::optional<std::size_t> at = end; at; at = prev[*at]) {
    const Slice& s = slices[*at];
    sum.critical_path.push_back(PathStep{s.id, s.name, s.kind, s.lane, s.iv.start_ns, s.iv.end_ns});
  }
  std::reverse(sum.critical_path.begin(), sum.critical_path.end());
  sum.critical_path_share = sum.wall_ns > 0 ? double(sum.critical_path_ns) / double(sum.wall_ns) : 0.0;
}

// Leaves out every slice that starts before the first one named `from`.
void keep_from(std::vector<Slice>& slices, const std::string& from) {
  std::optional<std::int64_t> start;
  for (const auto& s : slices)
    if (s.name == from && (!start || s.iv.start_ns < *start)) start = s.iv.start_ns;
  // A value the user typed that the trace lacks, as `hetflow dump --tile` with a tile it lacks.
  if (!start) throw UsageError("no event named '" + from + "' to start the window at");
  std::erase_if(slices, [&](const Slice& s) { return s.iv.start_ns < *start; });
}

// A trace hetflow wrote, read without what its summary does not look at: the hazard arrows (two
// events per edge) when its embedded dump has the edges, and that dump's nodes
// (analysis/filtered_json.hpp). Any other trace is read whole.
json parse_trace(const std::string& text) {
  const bool hetflow_trace = text.find("\"format\":\"hetflow-trace\"") != std::string::npos;
  json doc;
  try {
    if (hetflow_trace) doc = parse_leaving_out(text, JsonLeftOut{false, true, true});
    // Its arrows are the edges of a trace without an embedded dump: then they are needed after all.
    if (!hetflow_trace ||
        !(doc.is_object() && doc.contains("hetflow") && doc["hetflow"].is_object() && doc["hetflow"].contains("edges")))
      doc = json::parse(text);
  } catch (const json::parse_error& e) {
    bad(std::string("not JSON (") + e.what() + ")");
  }
  return doc;
}

TraceSummary summarize(const std::string& text, const std::string& from) {
  json doc = parse_trace(text);
  const json& events = trace_events(doc);
  TraceSummary sum;
  if (doc.is_object())
    if (auto od = doc.find("otherData"); od != doc.end() && od->is_object()) {
      if (auto d = od->find("device"); d != od->end() && d->is_string()) sum.device = d->get<std::string>();
      if (auto p = od->find("policy"); p != od->end() && p->is_string()) sum.policy = p->get<std::string>();
    }
  std::map<int, std::string> names;
  std::map<int, int> sort_index;
  std::vector<Slice> slices = read_slices(events, names, sort_index);
  if (!from.empty()) {
    keep_from(slices, from);
    sum.from = from;
  }
  if (!summarize_lanes(slices, names, sort_index, sum)) return sum;
  critical_path(slices, slice_edges(doc, events, slices, sum), sum);
  return sum;
}

}  // namespace

TraceSummary summarize_trace(const std::string& text, const std::string& from) {
  try {
    return summarize(text, from);
  } catch (const json::exception& e) {
    bad(std::string("unexpected content (") + e.what() + ")");
  }
}

TraceSummary summarize_trace_file(const std::string& path, const std::string& from) {
  const std::string text = detail::read_text_file(path, "trace");
  try {
    return summarize_trace(text, from);
  } catch (const UsageError& e) {  // what was asked of it, not the file, is wrong
    throw UsageError("trace '" + path + "': " + e.what());
  } catch (const Error& e) {
    throw Error("trace '" + path + "': " + e.what());
  }
}

std::string to_json(const TraceSummary& s) {
  json lanes = json::array();
  for (const auto& l : s.lanes)
    lanes.push_back(json{{"lane", l.lane},
                         {"busy_ns", l.busy_ns},
                         {"events", l.events},
                         {"gaps", l.gaps},
                         {"gap_median_ns", l.gap_median_ns},
                         {"gap_p90_ns", l.gap_p90_ns}});
  json gaps = json::array();
  for (const auto& g : s.idle_gaps) gaps.push_back(json{{"start_ns", g.start_ns}, {"end_ns", g.end_ns}});
  json path = json::array();
  for (const auto& p : s.critical_path)
    path.push_back(json{{"id", p.id},
                        {"name", p.name},
                        {"kind", p.kind},
                        {"lane", p.lane},
                        {"start_ns", p.start_ns},
                        {"end_ns", p.end_ns}});
  json doc{{"device", s.device},
           {"policy", s.policy},
           {"from", s.from},
           {"first_start_ns", s.first_start_ns},
           {"last_end_ns", s.last_end_ns},
           {"wall_ns", s.wall_ns},
           {"lanes", std::move(lanes)},
           {"busy_ns", s.busy_ns},
           {"overlap_ns", s.overlap_ns},
           {"idle_gaps", std::move(gaps)},
           {"idle_ns", s.idle_ns},
           {"largest_idle_ns", s.largest_idle_ns},
           {"waiting_ns", s.waiting_ns},
           {"critical_path", std::move(path)},
           {"critical_path_ns", s.critical_path_ns},
           {"critical_path_share", s.critical_path_share},
           {"edges_from_flows", s.edges_from_flows}};
  return doc.dump(2) + "\n";
}

}  // namespace hetflow
