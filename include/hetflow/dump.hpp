#pragma once
// The task graph of what a controller ran (docs/architecture.md, "Dumps and traces"): requests as nodes, hazards as
// edges, as JSON (docs/dump-schema.md; read back by `hetflow dump`) and as Graphviz DOT.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <hetflow/record.hpp>

namespace hetflow {

class Controller;

// What a dump says about the run besides its requests.
struct GraphInfo {
  std::string device;                          // device name
  std::string policy;                          // "async" or "sync"
  std::map<std::string, std::string> options;  // free-form settings (kernel_queues, platform, ...)
  // The program's own flow-graph nodes and loops that made requests, and the edges its messages took.
  // ({} initialisers: GraphInfo{device, policy, options} stays warning-free under -Wextra.)
  std::vector<FlowNodeRecord> flow_nodes{};
  std::vector<FlowEdgeRecord> flow_edges{};
};

// The GraphInfo of a controller: its device, policy and queue set-up.
GraphInfo graph_info(const Controller& c);

// JSON dump, format dump_format_name, version dump_format_version (docs/dump-schema.md).
std::string to_json(const std::vector<RequestRecord>& records, const GraphInfo& info);

// What a dump's "format" and "version" say (docs/dump-schema.md). Reading one back is the tools'
// (tools/analysis/dump_reader.hpp).
inline constexpr const char* dump_format_name = "hetflow-dump";
inline constexpr int dump_format_version = 1;

struct DotOptions {
  // Hide an edge A→C when C is also reached from A through other edges (a transitive reduction
  // over the node graph; the title says how many were hidden). On by default: a banded program of
  // 239 requests records 4,784 hazard edges, most of them implied.
  bool hide_redundant = true;
  enum class Layout {
    // One row per lane (H2D, kernel queues, D2H, host workers, waits) and one column per step:
    // each request right of its lane's previous one and of everything it waits for. Positions
    // are computed here and Graphviz only draws (`layout=nop`): 10,000 requests render in about
    // a second, where Graphviz's own layout took minutes.
    lanes,
    graphviz,  // Graphviz `dot` lays the graph out (left to right); fine for a few hundred requests
  };
  Layout layout = Layout::lanes;
  // Edge labels ("RAW a [0:1000) kernel_write→offloading_read") on the picture; above this many
  // shown edges they go to the edges' tooltips only (SVG), or they would cover the graph.
  std::size_t max_edge_labels = 80;
};

// Graphviz DOT: one node per request coloured by kind (failed: red border, cancelled: dashed),
// one edge per hazard labelled "RAW a [0:1000) kernel_write→offloading_read".
std::string to_dot(const std::vector<RequestRecord>& records, const GraphInfo& info, const DotOptions& options = {});

// Graphviz DOT of the program's own flow graph (info.flow_nodes and flow_edges): one box per node with
// its kind, messages, requests and their busy time; one edge per path its messages took, with their
// count. Empty graph (with a note) when the program used no hetflow node.
std::string to_flow_dot(const std::vector<RequestRecord>& records, const GraphInfo& info);

// A part of a large graph to look at: requests numbered `from`..`to` (inclusive), and, when `tile`
// is set, only those with a hazard on that tile or whose name names it ("move_to(a)").
struct RequestWindow {
  std::uint64_t from = 0;
  std::uint64_t to = UINT64_MAX;
  std::string tile;
};
// The requests in the window, keeping only the edges whose both ends are in it.
std::vector<RequestRecord> select_requests(const std::vector<RequestRecord>& records, const RequestWindow& window);

// The edges to_dot hides with hide_redundant, as (from, to) node pairs; every parallel edge of a
// hidden pair is hidden.
std::vector<std::pair<std::uint64_t, std::uint64_t>> redundant_edges(const std::vector<RequestRecord>& records);

// Convenience writers for a recording controller (ControllerOptions::record, HETFLOW_DUMP or
// HETFLOW_TRACE). Throw UsageError when the controller does not record, Error when the file
// cannot be written.
void write_dump_json(const Controller& c, const std::string& path);
void write_dump_dot(const Controller& c, const std::string& path, const DotOptions& options = {});
// to_flow_dot of the controller's run; returns false (and writes nothing) when no flow node or loop made
// requests on it.
bool write_flow_dot(const Controller& c, const std::string& path);
void write_trace(const Controller& c, const std::string& path);

// The file beside a dump: a .json extension is replaced by `suffix` (run.json → run.dot), any
// other name gets it appended (run → run.dot). HETFLOW_DUMP and `hetflow run --dump` both follow it.
std::string dump_companion(const std::string& dump_path, const char* suffix);

// What the controller's destructor calls: HETFLOW_DUMP=path writes the JSON dump at path, its DOT
// (path with .json replaced by .dot) and the controller's flow-graph topology (.topology.dot);
// HETFLOW_TRACE=path writes the Chrome trace. The second and later controllers of a process insert
// their number before the extension (run.json, run.2.json, ...) so none overwrites another.
// Errors go to the log, never out.
void write_env_dumps(const Controller& c) noexcept;
// How many of those files could not be written since the process started (each was logged): a
// program that must fail when its dump is missing, as `hetflow run` does, compares it before and after.
std::size_t env_dump_failures() noexcept;

namespace detail {
// Whole-file I/O for the dump, trace and CLI code; errors (Error) name the file and `what` it is
// ("dump", "trace", ...), and a directory as one.
std::string read_text_file(const std::string& path, const char* what);
void write_text_file(const std::string& path, const std::string& text, const char* what);
}  // namespace detail

}  // namespace hetflow
