// The task-graph dump (docs/architecture.md, "Dumps and traces"): records ⇄ JSON (docs/dump-schema.md) and records →
// DOT.
#include <hetflow/controller.hpp>
#include <hetflow/dump.hpp>
#include <hetflow/errors.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "json_text.hpp"

#include "engine.hpp"

namespace hetflow {

using nlohmann::json;

namespace detail {

std::string read_text_file(const std::string& path, const char* what) {
  // A directory opens and reads as empty, and would fail later as "not JSON" at the end of its input.
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    throw Error(std::string(what) + " '" + path + "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string(what) + " '" + path + "': cannot open it (missing or unreadable)");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw Error(std::string(what) + " '" + path + "': read error");
  return std::move(s).str();
}

void write_text_file(const std::string& path, const std::string& text, const char* what) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  // errno, as the failed open left it: "No such file or directory", "Permission denied", ...
  const auto why = [](const char* fallback) {
    return errno ? std::string(std::strerror(errno)) : std::string(fallback);
  };
  if (!out)
    throw Error("cannot write " + std::string(what) + " '" + path + "' (" + why("cannot open it for writing") + ")");
  out << text;
  out.close();
  if (!out) throw Error("cannot write " + std::string(what) + " '" + path + "' (" + why("write failed") + ")");
}

}  // namespace detail

namespace {

// Output keeps the schema's field order (docs/dump-schema.md); input accepts any order.
using ojson = nlohmann::ordered_json;

ojson region_json(const Box& b, int dims) {
  const int n = std::clamp(dims, 1, 3);
  ojson off = ojson::array(), size = ojson::array();
  for (int d = 0; d < n; ++d) {
    off.push_back(b.offset[d]);
    size.push_back(b.size[d]);
  }
  return ojson{{"offset", off}, {"size", size}};
}

ojson node_json(const RequestRecord& r) {
  ojson n{{"id", r.id},
          {"kind", r.kind},
          {"name", r.name},
          {"lane", r.lane},
          {"submit_ns", r.submit_ns},
          {"start_ns", r.start_ns},
          {"end_ns", r.end_ns},
          {"enqueue_ns", r.enqueue_ns},
          {"status", r.status},
          {"error", r.error}};
  if (r.flow_node) n["flow_node"] = r.flow_node;
  return n;
}

ojson edge_json(const EdgeRecord& e) {
  return ojson{{"from", e.from},      {"to", e.to},
               {"hazard", e.hazard},  {"tile", e.tile},
               {"image", e.image},    {"region", region_json(e.region, e.dims)},
               {"dims", e.dims},      {"from_slot", e.from_slot},
               {"to_slot", e.to_slot}};
}

// ---- DOT ----------------------------------------------------------------------------------

// The length of the well-formed UTF-8 sequence at s[i] (1-4), or 0 if it is not one.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const std::size_t n = lead < 0x80                   ? 1
                        : lead >= 0xc2 && lead < 0xe0 ? 2
                        : lead >= 0xe0 && lead < 0xf0 ? 3
                        : lead >= 0xf0 && lead < 0xf5 ? 4
                                                      : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

// Names come from the program: quotes and backslashes escaped, and what Graphviz's SVG would
// carry into XML unparsable (control characters, bytes that are not UTF-8) shown as U+FFFD.
std::string dot_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '\n') {
      out += "\\n";
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0 || (n == 1 && (static_cast<unsigned char>(c) < 0x20 || c == 0x7f))) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out.append(s, i, n);
    i += n;
  }
  return out;
}

std::string duration_text(std::int64_t ns) {
  char buf[32];
  if (ns >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.3f ms", double(ns) / 1e6);
  else if (ns >= 1'000)
    std::snprintf(buf, sizeof buf, "%.1f µs", double(ns) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  return buf;
}

const char* fill_colour(const std::string& kind) {
  if (kind == "H2D") return "#ffd8a8";
  if (kind == "D2H") return "#b2f2bb";
  if (kind == "kernel") return "#a5d8ff";
  if (kind == "host") return "#eebefa";
  if (kind == "wait") return "#e9ecef";
  if (kind == "free") return "#fff3bf";
  return "#ffffff";
}

std::string shorten(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

}  // namespace

std::string to_json(const std::vector<RequestRecord>& records, const GraphInfo& info) {
  // Laid out by hand around compact objects: one node or edge per line stays readable and diffs
  // well, where a pretty-printer spreads every region over a dozen lines. Each object is written
  // as it is made: a document of every node and edge at once took ~10 bytes of memory for each
  // byte written (50,000 requests: 540 MB for a 30 MB dump).
  std::string out = "{\n";
  auto line = [&out](const char* key, const ojson& v) {
    out += std::string(" \"") + key + "\": " + detail::json_text(v) + ",\n";
  };
  // A list of `count` items, item(i, out) appending the i-th one's text.
  auto list = [&out](const char* key, std::size_t count, bool last, auto&& item) {
    out += std::string(" \"") + key + "\": [";
    for (std::size_t i = 0; i < count; ++i) {
      out += i ? ",\n  " : "\n  ";
      item(i);
    }
    out += count ? "\n ]" : "]";
    out += last ? "\n" : ",\n";
  };
  line("format", dump_format_name);
  line("version", dump_format_version);
  line("device", info.device);
  line("policy", info.policy);
  if (!info.options.empty()) line("options", ojson(info.options));
  if (!info.flow_nodes.empty()) {
    list("flow_nodes", info.flow_nodes.size(), false, [&](std::size_t i) {
      const auto& n = info.flow_nodes[i];
      ojson o{{"id", n.id}, {"name", n.name}, {"kind", n.kind}, {"messages", n.messages}};
      if (n.failed_messages) o["failed_messages"] = n.failed_messages;
      if (!n.state.empty()) o["state"] = n.state;
      out += detail::json_text(o);
    });
    list("flow_edges", info.flow_edges.size(), false, [&](std::size_t i) {
      const auto& e = info.flow_edges[i];
      out += detail::json_text(ojson{{"from", e.from}, {"to", e.to}, {"messages", e.messages}});
    });
  }
  list("nodes", records.size(), false, [&](std::size_t i) { out += detail::json_text(node_json(records[i])); });
  // Edges are listed by their target's record; the flat index runs over them in that order.
  std::vector<const EdgeRecord*> edges;
  for (const auto& r : records)
    for (const auto& e : r.in_edges) edges.push_back(&e);
  list("edges", edges.size(), true, [&](std::size_t i) { out += detail::json_text(edge_json(*edges[i])); });
  return out + "}\n";
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> redundant_edges(const std::vector<RequestRecord>& records) {
  // Successors per node, each pair once (a pair may carry several hazards).
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> succ;
  bool increasing = true;  // the engine's edges go from earlier to later requests
  for (const auto& r : records)
    for (const auto& e : r.in_edges) {
      auto& s = succ[e.from];
      if (std::find(s.begin(), s.end(), e.to) == s.end()) s.push_back(e.to);
      increasing = increasing && e.from < e.to;
    }

  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  std::unordered_set<std::uint64_t> reached;
  std::vector<std::uint64_t> stack;
  for (const auto& [u, direct] : succ) {
    if (direct.size() < 2) continue;
    // With increasing ids no path from u can come back down to a target of u beyond the largest
    // one, which keeps each search to a window of the graph.
    const std::uint64_t limit = *std::max_element(direct.begin(), direct.end());
    reached.clear();
    for (std::uint64_t w : direct) {
      auto it = succ.find(w);
      if (it == succ.end()) continue;
      for (std::uint64_t x : it->second) stack.push_back(x);
      while (!stack.empty()) {
        const std::uint64_t x = stack.back();
        stack.pop_back();
        if ((increasing && x > limit) || !reached.insert(x).second) continue;
        if (auto nx = succ.find(x); nx != succ.end())
          for (std::uint64_t y : nx->second) stack.push_back(y);
      }
    }
    for (std::uint64_t v : direct)
      if (reached.count(v)) out.emplace_back(u, v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<RequestRecord> select_requests(const std::vector<RequestRecord>& records, const RequestWindow& window) {
  // A request touches the tile if a hazard into or out of it is on the tile, or its name says so.
  std::unordered_set<std::uint64_t> on_tile;
  if (!window.tile.empty()) {
    const std::string in_name = "(" + window.tile + ")";
    for (const auto& r : records) {
      if (r.name.find(in_name) != std::string::npos) on_tile.insert(r.id);
      for (const auto& e : r.in_edges)
        if (e.tile == window.tile) on_tile.insert(e.from), on_tile.insert(e.to);
    }
  }
  std::vector<RequestRecord> out;
  std::unordered_set<std::uint64_t> kept;
  for (const auto& r : records)
    if (r.id >= window.from && r.id <= window.to && (window.tile.empty() || on_tile.count(r.id))) {
      out.push_back(r);
      kept.insert(r.id);
    }
  for (auto& r : out) std::erase_if(r.in_edges, [&](const EdgeRecord& e) { return !kept.count(e.from); });
  return out;
}

namespace {

// Lanes top to bottom in the order a request travels: H2D, kernel queues (or the one sync queue),
// D2H, host workers, waits, anything else.
int lane_order(const std::string& lane) {
  auto numbered = [&](const char* prefix, int base) {
    const std::size_t n = std::char_traits<char>::length(prefix);
    if (lane.compare(0, n, prefix) != 0 || lane.size() == n) return -1;
    return base + std::atoi(lane.c_str() + n);
  };
  if (lane == "H2D") return 0;
  if (int k = numbered("kernel", 1000); k >= 0) return k;
  if (lane == "queue") return 2000;
  if (lane == "D2H") return 3000;
  if (lane == "host") return 4000;
  if (int h = numbered("host", 4001); h >= 0) return h;
  if (lane == "wait") return 9000;
  return 10000;
}

// Points: where each request sits in the lanes layout (DotOptions::Layout::lanes).
struct LanePositions {
  std::unordered_map<std::uint64_t, std::pair<double, double>> at;
  std::vector<std::pair<std::string, double>> lane_rows;  // lane name, y
};

LanePositions lane_positions(const std::vector<RequestRecord>& records) {
  constexpr double column_width = 150, row_height = 56, lane_gap = 24;
  // Column: one step right of everything the request waits for (as soon as its hazards allow),
  // so requests that may run at once share a column and stack inside their lane.
  std::vector<const RequestRecord*> order;
  for (const auto& r : records) order.push_back(&r);
  std::sort(order.begin(), order.end(), [](const RequestRecord* a, const RequestRecord* b) { return a->id < b->id; });
  std::unordered_map<std::uint64_t, long> column;
  std::map<std::pair<std::string, long>, int> stacked;  // (lane, column) → requests placed there
  std::unordered_map<std::uint64_t, int> level;         // its place in that stack
  std::map<std::string, int> lane_height;
  for (const RequestRecord* r : order) {  // program order: predecessors come first
    long c = 0;
    for (const auto& e : r->in_edges)
      if (auto it = column.find(e.from); it != column.end()) c = std::max(c, it->second + 1);
    column[r->id] = c;
    const int k = stacked[{r->lane, c}]++;
    level[r->id] = k;
    lane_height[r->lane] = std::max(lane_height[r->lane], k + 1);
  }
  std::vector<std::string> lanes;
  for (const auto& [lane, h] : lane_height) lanes.push_back(lane);
  std::stable_sort(lanes.begin(), lanes.end(),
                   [](const std::string& a, const std::string& b) { return lane_order(a) < lane_order(b); });
  LanePositions p;
  std::unordered_map<std::string, double> lane_top;
  double y = 0;  // from the bottom lane up: Graphviz's y grows upwards
  for (auto it = lanes.rbegin(); it != lanes.rend(); ++it) {
    const double height = double(lane_height[*it]) * row_height;
    lane_top[*it] = y + height - row_height;
    p.lane_rows.emplace_back(*it, y + (height - row_height) / 2);
    y += height + lane_gap;
  }
  for (const RequestRecord* r : order)
    p.at[r->id] = {double(column[r->id] + 1) * column_width, lane_top[r->lane] - double(level[r->id]) * row_height};
  return p;
}

// The title counts every hazard edge, and how many of them the picture leaves out.
struct ShownEdges {
  std::set<std::pair<std::uint64_t, std::uint64_t>> hidden;
  std::size_t all = 0, shown = 0;
  bool shows(const EdgeRecord& e) const { return !hidden.count({e.from, e.to}); }
};

ShownEdges shown_edges(const std::vector<RequestRecord>& records, const DotOptions& options) {
  ShownEdges edges;
  if (options.hide_redundant) {
    const auto r = redundant_edges(records);
    edges.hidden.insert(r.begin(), r.end());
  }
  for (const auto& r : records)
    for (const auto& e : r.in_edges) {
      ++edges.all;
      edges.shown += edges.shows(e);
    }
  return edges;
}

std::string dot_title(const std::vector<RequestRecord>& records, const GraphInfo& info, const ShownEdges& edges,
                      bool edge_labels) {
  std::string title = "hetflow task graph";
  if (!info.device.empty()) title += " — " + info.device;
  if (!info.policy.empty()) title += " (" + info.policy + ")";
  title += "\\n" + std::to_string(records.size()) + " requests, " + std::to_string(edges.all) + " hazard edges";
  if (edges.shown < edges.all)
    title += " (" + std::to_string(edges.all - edges.shown) + " implied by others hidden: --all-edges shows them)";
  if (!edge_labels) title += "; edge labels in the SVG's tooltips";
  return title;
}

void write_dot_header(std::ostream& dot, const std::string& title, bool lanes) {
  dot << "digraph hetflow {\n"
      << "  graph [rankdir=LR, labelloc=t, fontname=\"Helvetica\", label=\"" << title << "\""
      << (lanes ? ", layout=nop, splines=false, outputorder=edgesfirst" : "") << "];\n"
      << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10"
      << (lanes ? ", width=1.8, height=0.6, fixedsize=true" : "") << "];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=8];\n";
}

void write_lane_names(std::ostream& dot, const LanePositions& positions) {
  for (const auto& [lane, y] : positions.lane_rows)
    dot << "  \"lane " << dot_escape(lane) << "\" [shape=plaintext, style=\"\", fontsize=12, label=\""
        << dot_escape(lane) << "\", pos=\"0," << y << "!\"];\n";
}

std::string request_label(const RequestRecord& r) {
  std::string label = "#" + std::to_string(r.id) + " " + r.name + "\n" + r.lane;
  if (r.start_ns >= 0 && r.end_ns >= r.start_ns) label += " · " + duration_text(r.end_ns - r.start_ns);
  if (r.status != "done") label += "\n" + r.status;
  if (!r.error.empty()) label += ": " + shorten(r.error, 60);
  return label;
}

// A request's style attribute, and the attributes after it: how its status and kind show.
struct RequestLook {
  std::string style = "rounded,filled";
  std::string extra;
};

RequestLook request_look(const RequestRecord& r) {
  RequestLook look;
  if (r.status == "failed") look.extra = ", color=\"#e03131\", penwidth=3";
  if (r.status == "cancelled") {
    look.style += ",dashed";
    look.extra = ", color=\"#868e96\", fontcolor=\"#868e96\"";
  }
  if (r.status == "pending") look.style += ",dotted";
  if (r.kind == "wait") look.extra += ", shape=ellipse, fontsize=8";
  return look;
}

std::string request_tooltip(const RequestRecord& r, const FlowNodeRecord* made_by) {
  std::string tooltip = r.kind + " #" + std::to_string(r.id) + " on " + r.lane + "\nsubmit " +
                        std::to_string(r.submit_ns) + " ns, start " + std::to_string(r.start_ns) + " ns, end " +
                        std::to_string(r.end_ns) + " ns";
  if (made_by) tooltip += "\nmade by " + made_by->kind + " '" + made_by->name + "'";
  if (!r.error.empty()) tooltip += "\n" + r.error;
  return tooltip;
}

void write_request(std::ostream& out, const RequestRecord& r, const FlowNodeRecord* made_by,
                   std::optional<std::pair<double, double>> position) {
  const RequestLook look = request_look(r);
  out << "  n" << r.id << " [label=\"" << dot_escape(request_label(r)) << "\", fillcolor=\"" << fill_colour(r.kind)
      << "\", style=\"" << look.style << "\"" << look.extra << ", tooltip=\"" << dot_escape(request_tooltip(r, made_by))
      << "\"";
  if (position) out << ", pos=\"" << position->first << "," << position->second << "!\"";
  out << "];\n";
}

// `lanes` is null where Graphviz lays the requests out itself.
void write_requests(std::ostream& dot, const std::vector<RequestRecord>& records, const GraphInfo& info,
                    LanePositions* lanes) {
  std::map<std::uint32_t, const FlowNodeRecord*> flow_node_of;
  for (const auto& n : info.flow_nodes) flow_node_of[n.id] = &n;
  // Graphviz's own layout draws the requests of each of the program's flow nodes in a box of their own.
  std::map<std::uint32_t, std::ostringstream> clustered;
  for (const auto& r : records) {
    const auto made_by = flow_node_of.find(r.flow_node);
    const bool in_cluster = !lanes && made_by != flow_node_of.end();
    write_request(in_cluster ? clustered[r.flow_node] : dot, r,
                  made_by != flow_node_of.end() ? made_by->second : nullptr,
                  lanes ? std::optional(lanes->at[r.id]) : std::nullopt);
  }
  for (const auto& [id, body] : clustered) {
    const FlowNodeRecord& n = *flow_node_of.at(id);
    dot << "  subgraph cluster_flow_node_" << id << " {\n    label=\"" << dot_escape(n.kind + " '" + n.name + "'")
        << "\"; style=dashed; color=\"#495057\";\n"
        << body.str() << "  }\n";
  }
}

void write_hazard_edges(std::ostream& dot, const std::vector<RequestRecord>& records, const ShownEdges& edges,
                        bool edge_labels) {
  for (const auto& r : records)
    for (const auto& e : r.in_edges) {
      if (!edges.shows(e)) continue;
      const std::string label =
          e.hazard + " " + e.tile + " " + e.region.str(e.dims) + " " + e.from_slot + "→" + e.to_slot;
      // Host-image hazards in violet, device-image ones in black: the label alone does not say.
      const char* colour = e.image == "host" ? "#7048e8" : "#212529";
      const std::string what = e.hazard + " on " + e.tile + "'s " + e.image + " image";
      dot << "  n" << e.from << " -> n" << e.to << " [";
      if (edge_labels) dot << "label=\"" << dot_escape(label) << "\", ";
      dot << "color=\"" << colour << "\", fontcolor=\"" << colour << "\", tooltip=\""
          << dot_escape(edge_labels ? what : label + "\n" + what) << "\"];\n";
    }
}

}  // namespace

std::string to_dot(const std::vector<RequestRecord>& records, const GraphInfo& info, const DotOptions& options) {
  const ShownEdges edges = shown_edges(records, options);
  const bool edge_labels = edges.shown <= options.max_edge_labels;
  const bool lanes = options.layout == DotOptions::Layout::lanes;

  std::ostringstream dot;
  write_dot_header(dot, dot_title(records, info, edges, edge_labels), lanes);
  std::optional<LanePositions> positions;
  if (lanes) {
    positions = lane_positions(records);
    write_lane_names(dot, *positions);
  }
  write_requests(dot, records, info, positions ? &*positions : nullptr);
  write_hazard_edges(dot, records, edges, edge_labels);
  dot << "}\n";
  return dot.str();
}

std::string to_flow_dot(const std::vector<RequestRecord>& records, const GraphInfo& info) {
  struct Made {
    std::size_t requests = 0, failed = 0;
    std::int64_t device_ns = 0, host_ns = 0;  // summed durations of its device commands, its host requests
  };
  std::map<std::uint32_t, Made> made;
  for (const auto& r : records) {
    if (!r.flow_node) continue;
    auto& m = made[r.flow_node];
    ++m.requests;
    m.failed += r.status == "failed" || r.status == "cancelled";
    if (r.start_ns >= 0 && r.end_ns >= r.start_ns)
      (r.kind == "host" || r.kind == "wait" || r.kind == "free" ? m.host_ns : m.device_ns) += r.end_ns - r.start_ns;
  }
  std::ostringstream dot;
  std::string title = "the program's flow graph";
  if (!info.device.empty()) title += " — " + info.device;
  if (!info.policy.empty()) title += " (" + info.policy + ")";
  title += "\\nedges as the messages went, through whatever plain TBB nodes lie between";
  if (info.flow_nodes.empty()) title += "\\n(no hetflow flow node or loop made requests in this run)";
  dot << "digraph hetflow_flow_graph {\n"
      << "  graph [rankdir=LR, labelloc=t, fontname=\"Helvetica\", label=\"" << title << "\"];\n"
      << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  bool from_outside = false;
  for (const auto& e : info.flow_edges) from_outside = from_outside || e.from == 0;
  if (from_outside) dot << "  f0 [label=\"plain TBB nodes\\n(input_node, join, ...)\", shape=ellipse, style=\"\"];\n";
  for (const auto& n : info.flow_nodes) {
    const Made& m = made[n.id];
    std::string label = n.kind + "\n" + n.name + "\n" + std::to_string(n.messages) +
                        (n.kind == "parallel_for" ? " call(s)" : " message(s)") + " · " + std::to_string(m.requests) +
                        " request(s)";
    if (m.device_ns > 0) label += "\ndevice " + duration_text(m.device_ns);
    if (m.host_ns > 0) label += (m.device_ns > 0 ? " · host " : "\nhost ") + duration_text(m.host_ns);
    if (n.failed_messages)
      label += "\n" + std::to_string(n.failed_messages) + (n.kind == "parallel_for" ? " call(s)" : " message(s)") +
               " failed here";
    if (m.failed) label += "\n" + std::to_string(m.failed) + " request(s) failed or cancelled";
    const char* colour = n.kind == "kernel_node" ? "#a5d8ff" : n.kind == "parallel_for" ? "#ffd8a8" : "#eebefa";
    dot << "  f" << n.id << " [label=\"" << dot_escape(label) << "\", fillcolor=\"" << colour << "\""
        << (m.failed || n.failed_messages ? ", color=\"#e03131\", penwidth=2" : "")
        << (n.state.empty() ? "" : ", tooltip=\"" + dot_escape(n.state) + "\"") << "];\n";
  }
  for (const auto& e : info.flow_edges)
    dot << "  f" << e.from << " -> f" << e.to << " [label=\"" << e.messages << "\"];\n";
  dot << "}\n";
  return dot.str();
}

GraphInfo graph_info(const Controller& c) {
  GraphInfo info;
  info.device = c.device().name;
  info.policy = to_string(c.policy());
  info.options["platform"] = c.device().platform_name;
  info.options["device_id"] = c.device().id();
  info.options["device_reason"] = c.device_reason();
  info.options["kernel_queues"] = std::to_string(c.kernel_queues());
  info.options["idle_flush"] = detail::engine_of(c).idle_flush;
  const auto& topology = detail::engine_of(c).flow_topology();
  info.flow_nodes = topology.nodes();
  info.flow_edges = topology.edges();
  return info;
}

namespace {
void require_recording(const Controller& c, const char* fn) {
  if (!c.recording())
    throw UsageError(std::string(fn) +
                     ": the controller does not record its requests (set ControllerOptions::record, or HETFLOW_DUMP "
                     "or HETFLOW_TRACE before creating it)");
}
}  // namespace

void write_dump_json(const Controller& c, const std::string& path) {
  require_recording(c, "write_dump_json");
  detail::write_text_file(path, to_json(c.records(), graph_info(c)), "dump");
}

void write_dump_dot(const Controller& c, const std::string& path, const DotOptions& options) {
  require_recording(c, "write_dump_dot");
  detail::write_text_file(path, to_dot(c.records(), graph_info(c), options), "DOT dump");
}

bool write_flow_dot(const Controller& c, const std::string& path) {
  require_recording(c, "write_flow_dot");
  const GraphInfo info = graph_info(c);
  if (info.flow_nodes.empty()) return false;
  detail::write_text_file(path, to_flow_dot(c.records(), info), "flow graph DOT");
  return true;
}

}  // namespace hetflow
