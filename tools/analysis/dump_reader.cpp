// Reading a JSON dump back (docs/dump-schema.md): for `hetflow dump` and the tests, not the
// runtime, which only writes dumps.
#include "analysis/dump_reader.hpp"

#include <hetflow/errors.hpp>

#include <algorithm>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "analysis/filtered_json.hpp"

namespace hetflow {

using nlohmann::json;

namespace {

constexpr const char* dump_format = dump_format_name;
constexpr int dump_version = dump_format_version;

// ---- reading back: every problem says where it is and what was expected --------------------

[[noreturn]] void bad(const std::string& what) { throw Error("not a valid hetflow dump: " + what); }

const json& field(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + " has no \"" + key + "\" field");
  return *it;
}

std::string string_field(const json& obj, const char* key, const std::string& where, bool required = true) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) bad(where + " has no \"" + key + "\" field");
    return {};
  }
  if (!it->is_string()) bad(where + ": \"" + key + "\" must be a string, not " + it->dump());
  return it->get<std::string>();
}

std::int64_t int_field(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_number_integer()) bad(where + ": \"" + key + "\" must be an integer, not " + v.dump());
  return v.get<std::int64_t>();
}

std::uint64_t id_field(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    bad(where + ": \"" + key + "\" must be a non-negative integer, not " + v.dump());
  return v.get<std::uint64_t>();
}

Box region_from(const json& r, const std::string& where, int& dims) {
  if (!r.is_object()) bad(where + ": \"region\" must be an object with \"offset\" and \"size\"");
  const json& off = field(r, "offset", where + ".region");
  const json& size = field(r, "size", where + ".region");
  if (!off.is_array() || !size.is_array() || off.size() != size.size() || off.empty() || off.size() > 3)
    bad(where + ".region: \"offset\" and \"size\" must be arrays of 1 to 3 integers of the same length");
  Box b;
  b.size = {1, 1, 1};
  for (std::size_t d = 0; d < off.size(); ++d) {
    if (!off[d].is_number_unsigned() || !size[d].is_number_unsigned())
      bad(where + ".region: offsets and sizes must be non-negative integers");
    b.offset[d] = off[d].get<std::size_t>();
    b.size[d] = size[d].get<std::size_t>();
  }
  dims = int(off.size());
  return b;
}

// The dump's JSON object, its format and version checked. A trace written by to_trace_json carries
// its dump: `hetflow dump trace.json` works too.
json dump_document(const std::string& text) {
  // A trace's events are not read here, only its embedded dump: each is left out as it is read
  // (analysis/filtered_json.hpp).
  json doc;
  try {
    doc = parse_leaving_out(text, JsonLeftOut{true, true, false});
  } catch (const json::parse_error& e) {
    bad(std::string("not JSON (") + e.what() + ")");
  }
  if (!doc.is_object()) bad("the top level is not a JSON object");
  if (!doc.contains("format") && doc.contains("traceEvents") && doc.contains("hetflow") && doc["hetflow"].is_object()) {
    json embedded = std::move(doc["hetflow"]);
    doc = std::move(embedded);
  }
  if (!doc.contains("format")) bad("no \"format\" field (expected \"" + std::string(dump_format) + "\")");
  const std::string format = string_field(doc, "format", "the top level");
  if (format != dump_format) bad("\"format\" is \"" + format + "\", expected \"" + dump_format + "\"");
  const json& version = field(doc, "version", "the top level");
  if (!version.is_number_integer() || version.get<int>() != dump_version)
    bad("\"version\" is " + version.dump() + "; this hetflow reads version " + std::to_string(dump_version));
  return doc;
}

GraphInfo graph_info_from(const json& doc) {
  GraphInfo info;
  info.device = string_field(doc, "device", "the top level", false);
  info.policy = string_field(doc, "policy", "the top level", false);
  if (auto it = doc.find("options"); it != doc.end()) {
    if (!it->is_object()) bad("\"options\" must be an object");
    for (const auto& [k, v] : it->items()) info.options[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  // The program's own flow graph: optional (only runs whose flow nodes or loops made requests have it).
  if (auto it = doc.find("flow_nodes"); it != doc.end()) {
    if (!it->is_array()) bad("\"flow_nodes\" must be an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string where = "flow_nodes[" + std::to_string(i) + "]";
      const json& n = (*it)[i];
      if (!n.is_object()) bad(where + " is not an object");
      FlowNodeRecord f;
      f.id = std::uint32_t(id_field(n, "id", where));
      f.name = string_field(n, "name", where);
      f.kind = string_field(n, "kind", where);
      f.messages = id_field(n, "messages", where);
      if (n.contains("failed_messages")) f.failed_messages = id_field(n, "failed_messages", where);
      f.state = string_field(n, "state", where, false);
      info.flow_nodes.push_back(std::move(f));
    }
  }
  if (auto it = doc.find("flow_edges"); it != doc.end()) {
    if (!it->is_array()) bad("\"flow_edges\" must be an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string where = "flow_edges[" + std::to_string(i) + "]";
      const json& e = (*it)[i];
      if (!e.is_object()) bad(where + " is not an object");
      FlowEdgeRecord f;
      f.from = std::uint32_t(id_field(e, "from", where));
      f.to = std::uint32_t(id_field(e, "to", where));
      f.messages = id_field(e, "messages", where);
      const auto known = [&](std::uint32_t id) {
        return std::any_of(info.flow_nodes.begin(), info.flow_nodes.end(),
                           [id](const FlowNodeRecord& n) { return n.id == id; });
      };
      if (f.from != 0 && !known(f.from))
        bad(where + ": \"from\" names flow node " + std::to_string(f.from) + ", which is not in \"flow_nodes\"");
      if (!known(f.to))
        bad(where + ": \"to\" names flow node " + std::to_string(f.to) + ", which is not in \"flow_nodes\"");
      info.flow_edges.push_back(f);
    }
  }
  return info;
}

RequestRecord node_from(const json& n, const std::string& where) {
  if (!n.is_object()) bad(where + " is not an object");
  RequestRecord r;
  r.id = id_field(n, "id", where);
  r.kind = string_field(n, "kind", where);
  r.name = string_field(n, "name", where);
  r.lane = string_field(n, "lane", where);
  r.status = string_field(n, "status", where);
  r.error = string_field(n, "error", where, false);
  r.submit_ns = int_field(n, "submit_ns", where);
  r.start_ns = int_field(n, "start_ns", where);
  r.end_ns = int_field(n, "end_ns", where);
  if (n.contains("enqueue_ns")) r.enqueue_ns = int_field(n, "enqueue_ns", where);  // absent before 2026-11-23
  if (n.contains("flow_node")) r.flow_node = std::uint32_t(id_field(n, "flow_node", where));
  return r;
}

EdgeRecord edge_from(const json& j, const std::string& where) {
  if (!j.is_object()) bad(where + " is not an object");
  EdgeRecord e;
  e.from = id_field(j, "from", where);
  e.to = id_field(j, "to", where);
  e.hazard = string_field(j, "hazard", where);
  e.tile = string_field(j, "tile", where);
  e.image = string_field(j, "image", where);
  e.from_slot = string_field(j, "from_slot", where);
  e.to_slot = string_field(j, "to_slot", where);
  int dims = 1;
  e.region = region_from(field(j, "region", where), where, dims);
  e.dims = dims;
  if (auto it = j.find("dims"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int>() < 1 || it->get<int>() > 3)
      bad(where + ": \"dims\" must be 1, 2 or 3");
    e.dims = it->get<int>();
  }
  return e;
}

std::pair<std::vector<RequestRecord>, GraphInfo> parse_dump(const std::string& text) {
  const json doc = dump_document(text);
  GraphInfo info = graph_info_from(doc);
  const json& nodes = field(doc, "nodes", "the top level");
  const json& edges = field(doc, "edges", "the top level");
  if (!nodes.is_array()) bad("\"nodes\" must be an array");
  if (!edges.is_array()) bad("\"edges\" must be an array");

  std::vector<RequestRecord> records;
  records.reserve(nodes.size());
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = "nodes[" + std::to_string(i) + "]";
    RequestRecord r = node_from(nodes[i], where);
    if (!index.emplace(r.id, records.size()).second) bad(where + ": id " + std::to_string(r.id) + " appears twice");
    records.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const std::string where = "edges[" + std::to_string(i) + "]";
    EdgeRecord e = edge_from(edges[i], where);
    if (!index.count(e.from))
      bad(where + ": \"from\" names node " + std::to_string(e.from) + ", which is not in \"nodes\"");
    auto to = index.find(e.to);
    if (to == index.end()) bad(where + ": \"to\" names node " + std::to_string(e.to) + ", which is not in \"nodes\"");
    records[to->second].in_edges.push_back(std::move(e));
  }
  return {std::move(records), std::move(info)};
}

}  // namespace

std::pair<std::vector<RequestRecord>, GraphInfo> from_json(const std::string& text) {
  try {
    return parse_dump(text);
  } catch (const json::exception& e) {
    bad(std::string("unexpected content (") + e.what() + ")");
  }
}

std::pair<std::vector<RequestRecord>, GraphInfo> load_dump(const std::string& path) {
  const std::string text = detail::read_text_file(path, "dump");
  try {
    return from_json(text);
  } catch (const Error& e) {
    throw Error("dump '" + path + "': " + e.what());
  }
}

}  // namespace hetflow
