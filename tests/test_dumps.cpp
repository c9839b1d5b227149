// Graph dumps, traces and the `hetflow dump` / `hetflow report` commands (docs/architecture.md, "Dumps and traces"):
// the pure formats on hand-made records and traces, then dumps of the Appendix A cases run on the device.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include <hetflow/dump.hpp>
#include <tbb/global_control.h>
#include <hetflow/trace.hpp>
#include <nlohmann/json.hpp>

#include "analysis/dump_reader.hpp"
#include "analysis/filtered_json.hpp"
#include "analysis/trace_summary.hpp"
#include "process.hpp"
#include "support.hpp"

using hetflow::Controller;
using hetflow::EdgeRecord;
using hetflow::Policy;
using hetflow::Range;
using hetflow::RequestRecord;
using hetflow::Tile;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t short_n = 1000;
constexpr std::size_t long_n = 10'000'000;

// Files the tests write and the CLI reads: one folder per suite in the build tree.
fs::path out_dir() {
  const fs::path dir = fs::path(HETFLOW_TEST_BINARY_DIR) / "test_dumps_out";
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) { return hetflow::detail::read_text_file(p.string(), "test file"); }

void spit(const fs::path& p, const std::string& text) {
  hetflow::detail::write_text_file(p.string(), text, "test file");
}

test::CommandResult cli(const std::string& args) {
  return test::run_command(std::string(HETFLOW_CLI_PATH) + " " + args);
}

// A path as one shell word.
std::string quoted(const fs::path& p) {
  std::string out(1, '\'');
  for (char ch : p.string()) {
    if (ch == '\'')
      out.append("'\\''");
    else
      out.push_back(ch);
  }
  out.push_back('\'');
  return out;
}

RequestRecord node(std::uint64_t id, std::string kind, std::string name, std::string lane, std::int64_t start,
                   std::int64_t end, std::string status = "done") {
  RequestRecord r;
  r.id = id;
  r.kind = std::move(kind);
  r.name = std::move(name);
  r.lane = std::move(lane);
  r.status = std::move(status);
  r.submit_ns = start >= 0 ? start - 5 : 0;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

EdgeRecord edge(std::uint64_t from, std::uint64_t to, std::string hazard = "RAW", std::string tile = "a") {
  EdgeRecord e;
  e.from = from;
  e.to = to;
  e.hazard = std::move(hazard);
  e.tile = std::move(tile);
  e.image = "device";
  e.region = hetflow::Box{{0, 0, 0}, {1000, 1, 1}};
  e.dims = 1;
  e.from_slot = "offloading_write";
  e.to_slot = "kernel_read";
  return e;
}

// The edges of a parsed dump from `from` to `to` (node ids).
std::vector<json> edges_between(const json& dump, std::uint64_t from, std::uint64_t to) {
  std::vector<json> out;
  for (const auto& e : dump["edges"])
    if (e["from"] == from && e["to"] == to) out.push_back(e);
  return out;
}

// The id of the nth node named `name`.
std::uint64_t id_of(const json& dump, const std::string& name, int nth = 0) {
  for (const auto& n : dump["nodes"])
    if (n["name"] == name && nth-- == 0) return n["id"].get<std::uint64_t>();
  FAIL("no node named " << name);
  return 0;
}

using Case = test::AppendixCase;

const Policy policies[] = {Policy::async, Policy::sync};

}  // namespace

// ---- pure formats ----------------------------------------------------------------------------

TEST_CASE("to_json writes the documented schema and from_json reads it back") {
  std::vector<RequestRecord> recs{node(1, "H2D", "move_to(a)", "H2D", 100, 200),
                                  node(2, "kernel", "k", "kernel0", 250, 900),
                                  node(3, "host", "check \"x\"", "host0", -1, -1, "cancelled")};
  recs[1].in_edges.push_back(edge(1, 2));
  EdgeRecord e2 = edge(2, 3, "RAW", "img");
  e2.image = "host";
  e2.region = hetflow::Box{{2, 3, 0}, {4, 5, 1}};
  e2.dims = 2;
  e2.from_slot = "offloading_read";
  e2.to_slot = "host_read";
  recs[2].in_edges.push_back(e2);
  recs[2].error = "not run: request #2 'k' that it depends on failed\nsecond line";
  hetflow::GraphInfo info{"Some Device", "async", {{"kernel_queues", "2"}}};

  const std::string text = hetflow::to_json(recs, info);
  const json j = json::parse(text);
  CHECK(j["format"] == "hetflow-dump");
  CHECK(j["version"] == 1);
  CHECK(j["device"] == "Some Device");
  CHECK(j["policy"] == "async");
  CHECK(j["options"]["kernel_queues"] == "2");
  REQUIRE(j["nodes"].size() == 3);
  const json& n = j["nodes"][1];
  for (const char* key : {"id", "kind", "name", "lane", "submit_ns", "start_ns", "end_ns", "status", "error"})
    CHECK_MESSAGE(n.contains(key), key);
  CHECK(n["start_ns"] == 250);
  REQUIRE(j["edges"].size() == 2);
  const json& e = j["edges"][1];
  for (const char* key : {"from", "to", "hazard", "tile", "image", "region", "from_slot", "to_slot"})
    CHECK_MESSAGE(e.contains(key), key);
  CHECK(e["region"]["offset"] == json::array({2, 3}));
  CHECK(e["region"]["size"] == json::array({4, 5}));

  const auto [back, back_info] = hetflow::from_json(text);
  CHECK(back_info.device == info.device);
  CHECK(back_info.policy == info.policy);
  CHECK(back_info.options == info.options);
  REQUIRE(back.size() == recs.size());
  for (std::size_t i = 0; i < recs.size(); ++i) {
    CAPTURE(i);
    CHECK(back[i].id == recs[i].id);
    CHECK(back[i].kind == recs[i].kind);
    CHECK(back[i].name == recs[i].name);
    CHECK(back[i].lane == recs[i].lane);
    CHECK(back[i].status == recs[i].status);
    CHECK(back[i].error == recs[i].error);
    CHECK(back[i].submit_ns == recs[i].submit_ns);
    CHECK(back[i].start_ns == recs[i].start_ns);
    CHECK(back[i].end_ns == recs[i].end_ns);
    REQUIRE(back[i].in_edges.size() == recs[i].in_edges.size());
    for (std::size_t k = 0; k < recs[i].in_edges.size(); ++k) {
      const auto &x = back[i].in_edges[k], &y = recs[i].in_edges[k];
      CHECK(x.from == y.from);
      CHECK(x.to == y.to);
      CHECK(x.hazard == y.hazard);
      CHECK(x.tile == y.tile);
      CHECK(x.image == y.image);
      CHECK(x.region == y.region);
      CHECK(x.dims == y.dims);
      CHECK(x.from_slot == y.from_slot);
      CHECK(x.to_slot == y.to_slot);
    }
  }
}

TEST_CASE("from_json says what is wrong with a file that is not a dump") {
  auto message = [](const std::string& text) {
    try {
      hetflow::from_json(text);
    } catch (const hetflow::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(message("{ not json").find("not JSON") != std::string::npos);
  CHECK(message(R"({"format":"something-else","version":1,"nodes":[],"edges":[]})")
            .find("\"format\" is \"something-else\"") != std::string::npos);
  CHECK(message(R"({"nodes":[],"edges":[]})").find("no \"format\"") != std::string::npos);
  CHECK(message(R"({"format":"hetflow-dump","version":7,"nodes":[],"edges":[]})").find("version") != std::string::npos);
  CHECK(message(R"({"format":"hetflow-dump","version":1,"edges":[]})").find("\"nodes\"") != std::string::npos);
  CHECK(message(R"({"format":"hetflow-dump","version":1,"nodes":[{"id":1}],"edges":[]})").find("nodes[0]") !=
        std::string::npos);
  const std::string dangling =
      R"({"format":"hetflow-dump","version":1,"nodes":[],"edges":[{"from":1,"to":2,"hazard":"RAW","tile":"a","image":"host",)"
      R"("region":{"offset":[0],"size":[1]},"from_slot":"x","to_slot":"y"}]})";
  CHECK(message(dangling).find("not in \"nodes\"") != std::string::npos);
  // load_dump names the file.
  const fs::path missing = out_dir() / "no-such-dump.json";
  try {
    hetflow::load_dump(missing.string());
    FAIL("load_dump of a missing file did not throw");
  } catch (const hetflow::Error& e) {
    CHECK(std::string(e.what()).find(missing.string()) != std::string::npos);
  }
}

TEST_CASE("docs/dump-schema.md lists every from_slot / to_slot name the engine writes") {
  const std::string source = slurp(fs::path(HETFLOW_TEST_SOURCE_DIR) / "src" / "access_plan.hpp");
  const std::string schema = slurp(fs::path(HETFLOW_TEST_SOURCE_DIR) / "docs" / "dump-schema.md");
  const auto row = schema.find("| `from_slot`, `to_slot` |");
  REQUIRE(row != std::string::npos);
  const std::string listed = schema.substr(row, schema.find('\n', row) - row);
  const std::regex slot_name("\"((?:offloading|kernel|host|hook)_[a-z+]+)\"");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), slot_name); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  CHECK(names.size() >= 9);
  for (const auto& name : names) {
    CAPTURE(name);
    CHECK(listed.find("`" + name + "`") != std::string::npos);
  }
}

TEST_CASE("to_dot colours nodes by kind, marks failed and cancelled ones, and labels edges") {
  std::vector<RequestRecord> recs{node(1, "H2D", "move_to(a)", "H2D", 0, 10),
                                  node(2, "kernel", "k", "kernel0", 10, 20, "failed"),
                                  node(3, "D2H", "move_from(b)", "D2H", -1, -1, "cancelled"),
                                  node(4, "host", "h", "host0", 30, 40), node(5, "wait", "wait_all", "wait", -1, 50)};
  recs[1].error = "CL_OUT_OF_RESOURCES";
  recs[1].in_edges.push_back(edge(1, 2));
  EdgeRecord kb = edge(2, 3, "RAW", "b");
  kb.from_slot = "kernel_write";
  kb.to_slot = "offloading_read";
  recs[2].in_edges.push_back(kb);
  const std::string dot = hetflow::to_dot(recs, {"dev", "async", {}});
  CHECK(dot.rfind("digraph", 0) == 0);
  CHECK(dot.find("label=\"RAW a [0:1000) offloading_write→kernel_read\"") != std::string::npos);
  CHECK(dot.find("label=\"RAW b [0:1000) kernel_write→offloading_read\"") != std::string::npos);
  // One fill colour per kind.
  std::set<std::string> fills;
  const std::regex fill_re("fillcolor=\"(#[0-9a-f]{6})\"");
  for (auto it = std::sregex_iterator(dot.begin(), dot.end(), fill_re); it != std::sregex_iterator(); ++it)
    fills.insert((*it)[1]);
  CHECK(fills.size() == 5);
  auto node_line = [&](int id) {
    const auto at = dot.find("  n" + std::to_string(id) + " [");
    REQUIRE(at != std::string::npos);
    return dot.substr(at, dot.find('\n', at) - at);
  };
  CHECK(node_line(2).find("color=\"#e03131\"") != std::string::npos);  // failed: red border
  CHECK(node_line(2).find("CL_OUT_OF_RESOURCES") != std::string::npos);
  CHECK(node_line(3).find("dashed") != std::string::npos);  // cancelled: dashed
  CHECK(node_line(1).find("dashed") == std::string::npos);
  CHECK(node_line(1).find("#e03131") == std::string::npos);
}

TEST_CASE("to_dot hides A→C beside A→B→C by default, and shows every edge when asked") {
  std::vector<RequestRecord> recs{node(1, "H2D", "A", "H2D", 0, 1), node(2, "kernel", "B", "kernel0", 1, 2),
                                  node(3, "D2H", "C", "D2H", 2, 3)};
  recs[1].in_edges.push_back(edge(1, 2, "RAW", "a"));
  recs[2].in_edges.push_back(edge(2, 3, "RAW", "b"));
  recs[2].in_edges.push_back(edge(1, 3, "WAR", "c"));
  using Pair = std::pair<std::uint64_t, std::uint64_t>;
  CHECK(hetflow::redundant_edges(recs) == std::vector<Pair>{{1, 3}});
  const std::string all = hetflow::to_dot(recs, {}, hetflow::DotOptions{false});
  CHECK(all.find("n1 -> n3") != std::string::npos);
  CHECK(all.find("n1 -> n2") != std::string::npos);
  CHECK(all.find("n2 -> n3") != std::string::npos);
  const std::string reduced = hetflow::to_dot(recs, {});
  CHECK(reduced.find("1 implied by others hidden") != std::string::npos);  // the picture says so
  CHECK(reduced.find("n1 -> n3") == std::string::npos);
  CHECK(reduced.find("n1 -> n2") != std::string::npos);
  CHECK(reduced.find("n2 -> n3") != std::string::npos);
}

namespace {
// A hand-made trace (µs): H2D [0,10) [20,30) [60,62), kernel0 [10,40), D2H [45,50), and a wait
// over all of it. Busy: H2D 22, kernel0 30, D2H 5; any lane 47; overlap [20,30) = 10; idle gaps
// [40,45) and [50,60); critical path 1→2→4→5 = 10+30+5+2 = 47 of a 62 µs wall.
json hand_trace(bool embed_edges) {
  json ev = json::array();
  const std::pair<int, const char*> lanes[] = {{1, "H2D"}, {10, "kernel0"}, {2, "D2H"}, {2000000, "wait"}};
  for (const auto& [tid, name] : lanes)
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", name}}}});
  struct S {
    int id, tid;
    double ts, dur;
    const char* kind;
  };
  const S slices[] = {{1, 1, 0, 10, "H2D"}, {2, 10, 10, 30, "kernel"}, {3, 1, 20, 10, "H2D"},
                      {4, 2, 45, 5, "D2H"}, {5, 1, 60, 2, "H2D"},      {6, 2000000, 0, 62, "wait"}};
  for (const auto& s : slices)
    ev.push_back({{"ph", "X"},
                  {"name", "r" + std::to_string(s.id)},
                  {"pid", 1},
                  {"tid", s.tid},
                  {"ts", s.ts},
                  {"dur", s.dur},
                  {"args", {{"id", s.id}, {"kind", s.kind}, {"status", "done"}}}});
  const std::pair<int, int> edges[] = {{1, 2}, {1, 3}, {2, 4}, {3, 4}, {4, 5}};
  json doc{{"traceEvents", ev}};
  if (embed_edges) {
    json e = json::array();
    for (const auto& [from, to] : edges) e.push_back({{"from", from}, {"to", to}});
    doc["hetflow"] = {{"nodes", json::array()}, {"edges", e}};
  } else {
    int flow = 0;
    for (const auto& [from, to] : edges) {
      const S& a = slices[from - 1];
      const S& b = slices[to - 1];
      ++flow;
      doc["traceEvents"].push_back({{"ph", "s"},
                                    {"id", flow},
                                    {"cat", "hazard"},
                                    {"name", "RAW"},
                                    {"pid", 1},
                                    {"tid", a.tid},
                                    {"ts", a.ts + a.dur / 2}});
      doc["traceEvents"].push_back({{"ph", "f"},
                                    {"bp", "e"},
                                    {"id", flow},
                                    {"cat", "hazard"},
                                    {"name", "RAW"},
                                    {"pid", 1},
                                    {"tid", b.tid},
                                    {"ts", b.ts + b.dur / 2}});
    }
  }
  return doc;
}

void check_hand_summary(const hetflow::TraceSummary& s) {
  CHECK(s.first_start_ns == 0);
  CHECK(s.last_end_ns == 62'000);
  CHECK(s.wall_ns == 62'000);
  std::map<std::string, std::int64_t> busy;
  for (const auto& l : s.lanes) busy[l.lane] = l.busy_ns;
  CHECK(busy == std::map<std::string, std::int64_t>{{"H2D", 22'000}, {"kernel0", 30'000}, {"D2H", 5'000}});
  for (const auto& l : s.lanes) {
    CAPTURE(l.lane);
    if (l.lane == "H2D") {  // [0,10) [20,30) [60,62): idle 10 then 30 between its events
      CHECK(l.gaps == 2);
      CHECK(l.gap_median_ns == 10'000);
      CHECK(l.gap_p90_ns == 30'000);
    } else {  // one event each
      CHECK(l.gaps == 0);
      CHECK(l.gap_median_ns == 0);
    }
  }
  CHECK(s.busy_ns == 47'000);
  CHECK(s.overlap_ns == 10'000);
  REQUIRE(s.idle_gaps.size() == 2);
  CHECK(s.idle_ns == 15'000);
  CHECK(s.largest_idle_ns == 10'000);
  CHECK(s.waiting_ns == 62'000);
  CHECK(s.critical_path_ns == 47'000);
  std::vector<std::uint64_t> path;
  for (const auto& p : s.critical_path) path.push_back(p.id);
  CHECK(path == std::vector<std::uint64_t>{1, 2, 4, 5});
  CHECK(s.critical_path_share == doctest::Approx(47.0 / 62.0));
}
}  // namespace

TEST_CASE("summarize_trace: busy, overlap, gaps and critical path of a hand-made trace") {
  SUBCASE("edges from an embedded dump") {
    const auto s = hetflow::summarize_trace(hand_trace(true).dump());
    CHECK_FALSE(s.edges_from_flows);
    check_hand_summary(s);
  }
  SUBCASE("edges from the flow arrows") {
    const auto s = hetflow::summarize_trace(hand_trace(false).dump());
    CHECK(s.edges_from_flows);
    check_hand_summary(s);
  }
  SUBCASE("the bare array form") {
    const auto s = hetflow::summarize_trace(hand_trace(false)["traceEvents"].dump());
    check_hand_summary(s);
  }
  SUBCASE("from an event on") {
    // r3 starts at 20 µs: r1, r2 (started at 10, ran to 40) and the wait are left out.
    const auto s = hetflow::summarize_trace(hand_trace(true).dump(), "r3");
    CHECK(s.from == "r3");
    CHECK(s.first_start_ns == 20'000);
    CHECK(s.wall_ns == 42'000);
    std::map<std::string, std::int64_t> busy;
    for (const auto& l : s.lanes) busy[l.lane] = l.busy_ns;
    CHECK(busy == std::map<std::string, std::int64_t>{{"H2D", 12'000}, {"D2H", 5'000}});
    CHECK(s.overlap_ns == 0);
    CHECK(s.idle_ns == 25'000);
    CHECK(s.waiting_ns == 0);
    std::vector<std::uint64_t> path;
    for (const auto& p : s.critical_path) path.push_back(p.id);
    CHECK(path == std::vector<std::uint64_t>{3, 4, 5});
    CHECK_THROWS_WITH_AS(hetflow::summarize_trace(hand_trace(true).dump(), "r9"),
                         doctest::Contains("no event named 'r9'"), hetflow::Error);
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(hetflow::summarize_trace("[1, 2"), doctest::Contains("not JSON"), hetflow::Error);
    CHECK_THROWS_WITH_AS(hetflow::summarize_trace(R"({"nodes": []})"), doctest::Contains("traceEvents"),
                         hetflow::Error);
  }
}

// ---- dumps of real runs ------------------------------------------------------------------------

TEST_CASE("host tasks the program's waiting threads run have lanes of their own: no two tasks of a lane overlap") {
  // One TBB worker, kept in a long task until the others have run: the three program threads
  // waiting for their tiles run their own tasks, several at once. Numbered by TBB slot, they were
  // recorded on the worker's lane (host0), overlapping there (a user's trial, 2026-11-29).
  tbb::global_control one_worker(tbb::global_control::max_allowed_parallelism, 2);
  hetflow::ControllerOptions options;
  options.record = true;
  Controller c(options);
  constexpr int threads = 3, rounds = 3;
  std::atomic<int> short_done{0};
  auto busy = c.tile<int>(1, "busy");
  c.host_task(
      "long",
      [&] {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (short_done.load() < threads * rounds && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      out(busy));
  std::vector<Tile<int>> tiles;
  for (int t = 0; t < threads; ++t) tiles.push_back(c.tile<int>(16, "t" + std::to_string(t)));
  std::vector<std::thread> program_threads;
  for (int t = 0; t < threads; ++t)
    program_threads.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        c.host_task(
            "short",
            [&] {
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
              ++short_done;
            },
            io(tiles[t]));
        c.wait(tiles[t]);
      }
    });
  for (auto& th : program_threads) th.join();
  CHECK(short_done.load() == threads * rounds);  // before the worker was free: the waiting threads ran them
  c.wait_all();
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> by_lane;
  for (const auto& r : c.records())
    if (r.kind == "host") by_lane[r.lane].push_back({r.start_ns, r.end_ns});
  CHECK(by_lane.size() >= 2);
  for (auto& [lane, spans] : by_lane) {
    CAPTURE(lane);
    CHECK(lane.rfind("host", 0) == 0);
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first >= spans[i - 1].second);
  }
}

TEST_CASE("T-03 dump: H2D a → kernel → D2H b, RAW on the device images") {
  // The engine records an edge only to a request still outstanding when the later one is
  // dispatched (completed accesses are pruned), so tile a is long here: its H2D is certain to be
  // running when the kernel is submitted, where a 4 KB one may already be done. Async only: under
  // sync move_to(a) has returned, done, before the kernel is submitted.
  Case t(Policy::async);
  auto a = t.c.tile<float>(long_n, "a");
  auto b = t.c.tile<float>(short_n, "b");
  test::change(t.c, a, 1.0f);
  test::change(t.c, b, 0.0f);
  t.c.wait_all();
  t.c.move_to(a);
  t.c.launch(t.k, Range(64).local(64), hetflow::in(a), hetflow::out(b), int(short_n), 2000);
  t.c.move_from(b);
  t.c.wait_all();
  REQUIRE(test::all_equal(b, 1.0f));

  const fs::path dir = out_dir();
  hetflow::write_dump_json(t.c, (dir / "t03.json").string());
  hetflow::write_dump_dot(t.c, (dir / "t03.dot").string());
  const json dump = json::parse(slurp(dir / "t03.json"));
  CHECK(dump["format"] == "hetflow-dump");
  CHECK(dump["policy"] == "async");
  CHECK(dump["device"] == t.c.device().name);
  const auto h2d = id_of(dump, "move_to(a)"), k = id_of(dump, "copy_loop"), d2h = id_of(dump, "move_from(b)");
  for (const auto& n : dump["nodes"]) {
    CHECK(n["status"] == "done");
    if (n["id"] == k) {
      CHECK(n["kind"] == "kernel");
      CHECK(n["lane"] == "kernel0");
    }
  }

  const auto in = edges_between(dump, h2d, k);
  REQUIRE(in.size() == 1);
  CHECK(in[0]["hazard"] == "RAW");
  CHECK(in[0]["tile"] == "a");
  CHECK(in[0]["image"] == "device");
  CHECK(in[0]["from_slot"] == "offloading_write");
  CHECK(in[0]["to_slot"] == "kernel_read");
  CHECK(in[0]["region"]["size"] == json::array({long_n}));
  const auto out = edges_between(dump, k, d2h);
  REQUIRE(out.size() == 1);
  CHECK(out[0]["hazard"] == "RAW");
  CHECK(out[0]["tile"] == "b");
  CHECK(out[0]["image"] == "device");
  CHECK(out[0]["from_slot"] == "kernel_write");
  CHECK(out[0]["to_slot"] == "offloading_read");
  CHECK(edges_between(dump, h2d, d2h).empty());

  const std::string dot = slurp(dir / "t03.dot");
  CHECK(dot.find("n" + std::to_string(h2d) + " -> n" + std::to_string(k) +
                 " [label=\"RAW a [0:10000000) offloading_write→kernel_read\"") != std::string::npos);
  CHECK(dot.find("n" + std::to_string(k) + " -> n" + std::to_string(d2h) +
                 " [label=\"RAW b [0:1000) kernel_write→offloading_read\"") != std::string::npos);
  // Graphviz accepts it.
  const auto r = test::run_command("dot -Tsvg " + quoted(dir / "t03.dot") + " -o " + quoted(dir / "t03.svg"));
  CHECK_MESSAGE(r.status == 0, r.output);
  CHECK(slurp(dir / "t03.svg").find("<svg") != std::string::npos);
}

TEST_CASE("T-07 dump: the WAR edge from the kernel reading a to the second move_to(a)") {
  for (Policy p : policies) {
    CAPTURE(test::policy_name(p));
    Case t(p);
    REQUIRE(test::all_equal(test::run_t07(t, short_n)[0], 2.0f));

    const json dump = json::parse(hetflow::to_json(t.c.records(), hetflow::graph_info(t.c)));
    const auto k = id_of(dump, "copy_loop"), h2d = id_of(dump, "move_to(a)", 1);
    const auto war = edges_between(dump, k, h2d);
    REQUIRE(war.size() == 1);
    CHECK(war[0]["hazard"] == "WAR");
    CHECK(war[0]["tile"] == "a");
    CHECK(war[0]["image"] == "device");
    CHECK(war[0]["from_slot"] == "kernel_read");
    CHECK(war[0]["to_slot"] == "offloading_write");
    const std::string dot = hetflow::to_dot(t.c.records(), hetflow::graph_info(t.c));
    CHECK(dot.find("n" + std::to_string(k) + " -> n" + std::to_string(h2d) +
                   " [label=\"WAR a [0:1000) kernel_read→offloading_write\"") != std::string::npos);
  }
}

// Traces and dumps are read leaving out what the reader never looks at (a 50,000-request trace took
// 880 MB to summarize whole): what is left must be exactly the rest of the document.
TEST_CASE("a trace read leaving out its events, arrows or embedded nodes is the rest of it, unchanged") {
  Case t(Policy::async);
  auto a = t.c.tile<float>(short_n, "a");
  auto b = t.c.tile<float>(short_n, "b");
  test::change(t.c, a, 1.0f);
  t.c.move_to(a);
  t.K(a, b, 200);
  t.c.move_from(b);
  test::change(t.c, a, 3.0f);
  t.c.wait_all();
  const std::string text = hetflow::to_trace_json(t.c.records(), hetflow::graph_info(t.c));
  const json whole = json::parse(text);
  const auto arrow = [](const json& ev) { return ev["ph"] == "s" || ev["ph"] == "f"; };
  REQUIRE(std::any_of(whole["traceEvents"].begin(), whole["traceEvents"].end(), arrow));

  CHECK(hetflow::parse_leaving_out(text, {}) == whole);
  json expected = whole;
  expected["traceEvents"] = json::array();
  for (const auto& ev : whole["traceEvents"])
    if (!arrow(ev)) expected["traceEvents"].push_back(ev);
  CHECK(hetflow::parse_leaving_out(text, {.hazard_arrows = true}) == expected);
  expected["traceEvents"] = json::array();
  CHECK(hetflow::parse_leaving_out(text, {.trace_events = true}) == expected);
  expected = whole;
  expected["hetflow"].erase("nodes");
  CHECK(hetflow::parse_leaving_out(text, {.embedded_nodes = true}) == expected);
  for (const char* bad : {"[1, 2", "{\"a\": }", "", "{\"n\": 1e999999}"}) {
    CAPTURE(bad);
    std::string whole_error, filtered_error;
    try {
      (void)json::parse(bad);
    } catch (const json::exception& e) {
      whole_error = e.what();
    }
    try {
      (void)hetflow::parse_leaving_out(bad, {.hazard_arrows = true});
    } catch (const json::exception& e) {
      filtered_error = e.what();
    }
    CHECK(!whole_error.empty());
    CHECK(filtered_error == whole_error);
  }

  // The summary and the dump read from the trace are those of the whole document (a trace not
  // marked as hetflow's is read whole).
  std::string unmarked = text;
  const std::string marker = "\"format\":\"hetflow-trace\"";
  REQUIRE(unmarked.find(marker) != std::string::npos);
  unmarked.replace(unmarked.find(marker), marker.size(), "\"format\":\"someone-else\"");
  CHECK(hetflow::to_json(hetflow::summarize_trace(text)) == hetflow::to_json(hetflow::summarize_trace(unmarked)));
  const auto [records, info] = hetflow::from_json(text);
  const auto [from_dump, dump_info] = hetflow::from_json(hetflow::to_json(t.c.records(), hetflow::graph_info(t.c)));
  CHECK(hetflow::to_json(records, info) == hetflow::to_json(from_dump, dump_info));

  // hetflow's own trace without an embedded dump: its arrows are its edges after all.
  json no_dump = hand_trace(false);
  no_dump["otherData"] = json{{"format", "hetflow-trace"}};
  const auto s = hetflow::summarize_trace(no_dump.dump());
  CHECK(s.edges_from_flows);
  check_hand_summary(s);
}

TEST_CASE("trace: valid Chrome JSON, every timed request on its lane's track at the dump's times") {
  for (Policy p : policies) {
    CAPTURE(test::policy_name(p));
    Case t(p);
    auto a = t.c.tile<float>(short_n, "a");
    auto b = t.c.tile<float>(short_n, "b");
    test::change(t.c, a, 1.0f);
    t.c.move_to(a);
    t.K(a, b, 2000);
    t.c.move_from(b);
    test::change(t.c, a, 3.0f);
    t.c.wait_all();
    REQUIRE(test::all_equal(b, 1.0f));

    const fs::path dir = out_dir();
    const std::string base = "trace-" + test::policy_name(p);
    hetflow::write_dump_json(t.c, (dir / (base + ".dump.json")).string());
    hetflow::write_trace(t.c, (dir / (base + ".json")).string());
    const json dump = json::parse(slurp(dir / (base + ".dump.json")));
    const json trace = json::parse(slurp(dir / (base + ".json")));
    REQUIRE(trace["traceEvents"].is_array());

    std::map<int, std::string> track;
    std::map<std::uint64_t, json> slice;
    std::vector<json> flows;
    for (const auto& ev : trace["traceEvents"]) {
      REQUIRE(ev.contains("ph"));
      REQUIRE(ev.contains("pid"));
      const std::string ph = ev["ph"];
      if (ph == "M" && ev["name"] == "thread_name") track[ev["tid"].get<int>()] = ev["args"]["name"];
      if (ph == "X") {
        CHECK(ev["args"].contains("status"));
        CHECK(ev["args"].contains("kind"));
        slice[ev["args"]["id"].get<std::uint64_t>()] = ev;
      }
      if (ph == "s" || ph == "f") flows.push_back(ev);
    }
    std::set<std::string> lanes;
    for (const auto& [tid, name] : track) lanes.insert(name);
    CHECK(lanes.count(p == Policy::async ? "H2D" : "queue"));

    std::size_t timed = 0, timed_edges = 0;
    for (const auto& n : dump["nodes"]) {
      const std::int64_t start = n["start_ns"], end = n["end_ns"];
      if (start < 0) continue;
      ++timed;
      CAPTURE(n.dump());
      const auto it = slice.find(n["id"].get<std::uint64_t>());
      REQUIRE(it != slice.end());
      const json& ev = it->second;
      CHECK(track[ev["tid"].get<int>()] == n["lane"].get<std::string>());
      CHECK(std::llround(ev["ts"].get<double>() * 1000.0) == start);
      CHECK(std::llround(ev["dur"].get<double>() * 1000.0) == end - start);
      CHECK(ev["name"] == n["name"]);
      CHECK(ev["args"]["status"] == n["status"]);
    }
    CHECK(timed >= 5);
    for (const auto& e : dump["edges"])
      if (slice.count(e["from"].get<std::uint64_t>()) && slice.count(e["to"].get<std::uint64_t>())) ++timed_edges;
    CHECK(timed_edges >= 1);
    CHECK(flows.size() == 2 * timed_edges);
    // Every arrow end lies inside a slice of its own track, where viewers bind it.
    for (const auto& f : flows) {
      const double ts = f["ts"];
      const int tid = f["tid"];
      const bool inside = std::any_of(slice.begin(), slice.end(), [&](const auto& kv) {
        const json& s = kv.second;
        return s["tid"] == tid && s["ts"].template get<double>() <= ts &&
               ts <= s["ts"].template get<double>() + s["dur"].template get<double>();
      });
      CHECK_MESSAGE(inside, f.dump());
    }
    // The summary agrees with the dump: each lane's busy time is at most the sum of its requests.
    const auto s = hetflow::summarize_trace(trace.dump());
    CHECK(s.wall_ns > 0);
    CHECK(!s.critical_path.empty());
    // Host and device clocks agree only to a few µs, hence the slack.
    CHECK(s.critical_path_ns <= s.wall_ns + 100'000);
  }
}

namespace {
// T-06 of Appendix A (with the original sequence's sync before change(c,0)), traced to `path`.
void t06_trace(Policy p, const fs::path& path) {
  Case t(p);
  const auto tiles = test::run_t05_t06(t, long_n, true, true);
  REQUIRE(test::all_equal(tiles[1], 1.0f));
  REQUIRE(test::all_equal(tiles[2], 2.0f));
  hetflow::write_trace(t.c, path.string());
}
}  // namespace

TEST_CASE("names that are not UTF-8 or hold control characters: dumps and traces are written, DOT stays clean") {
  Case t(Policy::async);
  auto a = t.c.tile<float>(short_n, "bad\xff\xfe");
  auto b = t.c.tile<float>(short_n, std::string("ctl\x01\x1f"));
  t.c.host_task(
      "fills \xc3", [a] { a[0] = 1.0f; }, hetflow::out(a));
  t.c.host_task(
      "throws", [] { throw std::runtime_error(std::string("why\x02")); }, hetflow::out(b));
  t.c.host_task(
      "reads both", [] {}, hetflow::in(a), hetflow::in(b));  // edges naming both tiles
  CHECK_THROWS_AS(t.c.wait_all(), hetflow::RequestFailed);
  const fs::path dir = out_dir();
  hetflow::write_dump_json(t.c, (dir / "names.json").string());
  hetflow::write_trace(t.c, (dir / "names.trace.json").string());
  const json dump = json::parse(slurp(dir / "names.json"));  // bytes that are not UTF-8 became U+FFFD
  CHECK(slurp(dir / "names.json").find("bad\xef\xbf\xbd\xef\xbf\xbd") != std::string::npos);
  CHECK(json::parse(slurp(dir / "names.trace.json"))["traceEvents"].is_array());
  const auto [records, info] = hetflow::load_dump((dir / "names.json").string());
  const std::string dot = hetflow::to_dot(records, info);
  for (unsigned char ch : dot) CHECK_MESSAGE((ch >= 0x20 || ch == '\n' || ch == '\t'), "control byte " << int(ch));
  CHECK(dot.find("ctl\xef\xbf\xbd\xef\xbf\xbd") != std::string::npos);
}

TEST_CASE("hetflow report lists the critical path's first 20 steps, then how many more and how to list them all") {
  Case t(Policy::sync);
  auto chain = t.c.tile<int>(1, "chain");
  for (int i = 0; i < 60; ++i)
    t.c.host_task(
        "step", [] {}, hetflow::io(chain));
  t.c.wait_all();
  const fs::path path = out_dir() / "chain.trace.json";
  hetflow::write_trace(t.c, path.string());
  const auto js = cli("report --json " + quoted(path));
  REQUIRE_MESSAGE(js.status == 0, js.output);
  const std::size_t steps = json::parse(js.output)["critical_path"].size();
  REQUIRE(steps >= 60);
  auto listed = [](const std::string& text) {
    std::size_t n = 0;
    for (std::size_t at = text.find("\n  #"); at != std::string::npos; at = text.find("\n  #", at + 1)) ++n;
    return n;
  };
  const auto text = cli("report " + quoted(path));
  INFO(text.output);
  CHECK(text.status == 0);
  CHECK(listed(text.output) == 20);
  CHECK(text.output.find("  ... " + std::to_string(steps - 20) + " more steps (--path-steps " + std::to_string(steps) +
                         " lists them all)") != std::string::npos);
  const auto all = cli("report --path-steps " + std::to_string(steps) + " " + quoted(path));
  INFO(all.output);
  CHECK(listed(all.output) == steps);
  CHECK(all.output.find("more step") == std::string::npos);
}

TEST_CASE("hetflow report on T-06: overlap under async, none under sync") {
  for (Policy p : policies) {
    CAPTURE(test::policy_name(p));
    const fs::path path = out_dir() / ("t06-" + test::policy_name(p) + ".trace.json");
    t06_trace(p, path);

    const auto text = cli("report " + quoted(path));
    REQUIRE_MESSAGE(text.status == 0, text.output);
    MESSAGE(text.output);
    for (const char* what : {"wall time", "overlap", "idle gaps", "median gap", "critical path", "copy_loop"})
      CHECK_MESSAGE(text.output.find(what) != std::string::npos, what);

    const auto js = cli("report --json " + quoted(path));
    REQUIRE_MESSAGE(js.status == 0, js.output);
    const json s = json::parse(js.output);
    CHECK(s["policy"] == test::policy_name(p));
    CHECK(s["wall_ns"].get<std::int64_t>() > 0);
    if (p == Policy::async)
      CHECK(s["overlap_ns"].get<std::int64_t>() > 0);
    else
      CHECK(s["overlap_ns"].get<std::int64_t>() == 0);
    CHECK(s["critical_path_ns"].get<std::int64_t>() > 0);
    CHECK(s["critical_path_ns"].get<std::int64_t>() <= s["wall_ns"].get<std::int64_t>());
    std::set<std::string> lanes;
    for (const auto& l : s["lanes"]) {
      lanes.insert(l["lane"].get<std::string>());
      // Gaps lie between a lane's merged events: fewer than its events, the median at most the p90.
      CHECK(l["gaps"].get<std::size_t>() < l["events"].get<std::size_t>());
      CHECK(l["gap_median_ns"].get<std::int64_t>() <= l["gap_p90_ns"].get<std::int64_t>());
      if (l["gaps"].get<std::size_t>() > 0) CHECK(l["gap_median_ns"].get<std::int64_t>() >= 0);
    }
    if (p == Policy::async) {
      CHECK(lanes.count("H2D"));
      CHECK(lanes.count("D2H"));
      CHECK(lanes.count("kernel0"));
    } else {
      CHECK(lanes.count("queue"));
    }
  }
}

TEST_CASE("hetflow dump renders a dump to SVG, PNG and DOT") {
  std::vector<RequestRecord> recs{node(1, "H2D", "A", "H2D", 0, 1), node(2, "kernel", "B", "kernel0", 1, 2),
                                  node(3, "D2H", "C", "D2H", 2, 3, "failed")};
  recs[1].in_edges.push_back(edge(1, 2));
  recs[2].in_edges.push_back(edge(2, 3));
  recs[2].in_edges.push_back(edge(1, 3, "WAR"));
  const fs::path dir = out_dir();
  const fs::path file = dir / "cli-dump.json";
  spit(file, hetflow::to_json(recs, {"dev", "async", {}}));
  fs::remove(dir / "cli-dump.svg");

  auto r = cli("dump " + quoted(file));  // SVG beside the file by default
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(r.output.find("3 nodes") != std::string::npos);
  CHECK(r.output.find("3 edges") != std::string::npos);
  CHECK(r.output.find("1 failed") != std::string::npos);
  CHECK(slurp(dir / "cli-dump.svg").find("<svg") != std::string::npos);

  r = cli("dump " + quoted(file) + " --svg " + quoted(dir / "x.svg") + " --png " + quoted(dir / "x.png") + " --dot " +
          quoted(dir / "x.dot") + " --hide-redundant");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(slurp(dir / "x.svg").find("<svg") != std::string::npos);
  CHECK(slurp(dir / "x.png").rfind("\x89PNG", 0) == 0);
  const std::string dot = slurp(dir / "x.dot");
  CHECK(dot.find("n1 -> n3") == std::string::npos);
  CHECK(dot.find("n2 -> n3") != std::string::npos);
}

TEST_CASE("tools/trace_timeline_svg.py draws a dump, and names what is wrong with a trace or an untimed dump") {
  // The README's timeline picture comes from it. A trace given in place of a dump ended in a Python
  // KeyError: 'nodes' (found by a user-style program).
  if (test::run_command("python3 --version").status != 0) return;  // the CLI's tests need no Python
  const std::string script = quoted(fs::path(HETFLOW_TEST_SOURCE_DIR) / "tools" / "trace_timeline_svg.py");
  std::vector<RequestRecord> recs{node(1, "H2D", "A", "H2D", 0, 1), node(2, "kernel", "B", "kernel0", 1, 2)};
  recs[1].in_edges.push_back(edge(1, 2));
  const fs::path dir = out_dir();
  spit(dir / "timeline-dump.json", hetflow::to_json(recs, {"dev", "async", {}}));
  auto r = test::run_command("python3 " + script + " " + quoted(dir / "timeline-dump.json") + " " +
                             quoted(dir / "timeline.svg"));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const std::string svg = slurp(dir / "timeline.svg");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("kernel0") != std::string::npos);

  spit(dir / "timeline-trace.json",
       R"({"traceEvents": [{"name": "B", "ph": "X", "ts": 1, "dur": 1}]})");  // a trace's shape
  r = test::run_command("python3 " + script + " " + quoted(dir / "timeline-trace.json") + " " +
                        quoted(dir / "timeline2.svg"));
  CHECK(r.status == 1);
  CHECK(r.output.find("is not a hetflow dump") != std::string::npos);
  CHECK(r.output.find("Traceback") == std::string::npos);

  for (auto& rec : recs) rec.start_ns = rec.end_ns = -1;  // recorded without times
  spit(dir / "timeline-untimed.json", hetflow::to_json(recs, {"dev", "async", {}}));
  r = test::run_command("python3 " + script + " " + quoted(dir / "timeline-untimed.json") + " " +
                        quoted(dir / "timeline3.svg"));
  CHECK(r.status == 1);
  CHECK(r.output.find("no timed request") != std::string::npos);
  CHECK(r.output.find("Traceback") == std::string::npos);
}

TEST_CASE("hetflow dump and report name the file and what is wrong with it") {
  const fs::path dir = out_dir();
  const fs::path missing = dir / "missing.json";
  const fs::path invalid = dir / "invalid.json";
  const fs::path other = dir / "other.json";
  spit(invalid, "{ \"format\": ");
  spit(other, R"({"format": "not-hetflow", "version": 1, "nodes": [], "edges": []})");
  for (const char* cmd : {"dump", "report"}) {
    CAPTURE(cmd);
    auto r = cli(std::string(cmd) + " " + quoted(missing));
    CHECK(r.status == 1);
    CHECK(r.output.find(missing.string()) != std::string::npos);
    CHECK(r.output.find("cannot open") != std::string::npos);
    r = cli(std::string(cmd) + " " + quoted(invalid));
    CHECK(r.status == 1);
    CHECK(r.output.find(invalid.string()) != std::string::npos);
    CHECK(r.output.find("not JSON") != std::string::npos);
    // A directory reads as empty: it used to be "not JSON ... unexpected end of input".
    r = cli(std::string(cmd) + " " + quoted(dir));
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find("'" + dir.string() + "' is a directory, not a file") != std::string::npos);
    CHECK(r.output.find("not JSON") == std::string::npos);
  }
  auto r = cli("dump " + quoted(other));
  CHECK(r.status == 1);
  CHECK(r.output.find(other.string()) != std::string::npos);
  CHECK(r.output.find("\"format\" is \"not-hetflow\"") != std::string::npos);
  r = cli("report " + quoted(other));
  CHECK(r.status == 1);
  CHECK(r.output.find("traceEvents") != std::string::npos);
  // A time whose nanoseconds overflow 64 bits: named, not a negative wall time.
  const fs::path far = dir / "far.json";
  spit(far, R"({"traceEvents": [{"ph": "X", "ts": 1e300, "dur": 1, "name": "k"}]})");
  r = cli("report " + quoted(far));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("traceEvents[0] has \"ts\" 1e+300") != std::string::npos);

  // Rendering: no Graphviz on PATH, and dot itself failing, each say so.
  const fs::path good = dir / "render-errors.json";
  spit(good, hetflow::to_json({node(1, "H2D", "A", "H2D", 0, 1)}, {}));
  r = test::run_command("PATH=/nonexistent " + std::string(HETFLOW_CLI_PATH) + " dump " + quoted(good));
  CHECK(r.status == 1);
  CHECK(r.output.find("Graphviz 'dot' was not found") != std::string::npos);
  r = cli("dump " + quoted(good) + " --svg " + quoted(dir / "no-such-dir" / "x.svg"));
  CHECK(r.status == 1);
  CHECK(r.output.find("'dot -Tsvg' failed") != std::string::npos);
  CHECK(r.output.find("no-such-dir") != std::string::npos);
}

TEST_CASE("hetflow dump ended by SIGINT or SIGTERM while Graphviz runs removes its temporary DOT file") {
  const fs::path dir = out_dir() / "interrupted";
  fs::remove_all(dir);
  fs::create_directories(dir / "bin");
  const fs::path dump = dir / "g.json", said = dir / "dot.said";
  spit(dump, hetflow::to_json({node(1, "H2D", "A", "H2D", 0, 1)}, {}));
  // A dot that says its pid and the file it was given, then takes its time as a large graph's does.
  spit(dir / "bin" / "dot", "#!/bin/sh\nprintf '%s %s\\n' \"$$\" \"$4\" > " + quoted(dir / "said.tmp") + "\nmv " +
                                quoted(dir / "said.tmp") + " " + quoted(said) + "\nexec sleep 60\n");
  fs::permissions(dir / "bin" / "dot", fs::perms::owner_all);
  const char* path = std::getenv("PATH");
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    fs::remove(said);
    const pid_t pid =
        test::start_process({HETFLOW_CLI_PATH, "dump", dump.string()},
                            {"PATH=" + (dir / "bin").string() + ":" + (path ? path : ""), "TMPDIR=" + dir.string()},
                            (dir / "log.txt").string());
    REQUIRE(pid > 0);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(said) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const bool rendering = fs::exists(said);
    ::kill(pid, rendering ? sig : SIGKILL);
    const int status = test::wait_status(pid);
    INFO(slurp(dir / "log.txt"));
    REQUIRE(rendering);
    long dot_pid = 0;
    char tmp[4096] = {};
    REQUIRE(std::sscanf(slurp(said).c_str(), "%ld %4095s", &dot_pid, tmp) == 2);
    ::kill(pid_t(dot_pid), SIGKILL);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(fs::path(tmp).parent_path() == dir);
    CHECK(fs::path(tmp).filename().string().rfind("hetflow-dump-", 0) == 0);
    CHECK(!fs::exists(tmp));
  }
  fs::remove_all(dir);
}

TEST_CASE("hetflow dump refuses a selection of no request, saying why, and writes nothing") {
  // 1 → 2 on tile a, 2 → 3 on tile "in flight", 4 alone.
  std::vector<RequestRecord> recs{node(1, "H2D", "move_to(a)", "H2D", 0, 1), node(2, "kernel", "B", "kernel0", 1, 2),
                                  node(3, "D2H", "C", "D2H", 2, 3), node(4, "host", "D", "host", 3, 4)};
  recs[1].in_edges.push_back(edge(1, 2));
  recs[2].in_edges.push_back(edge(2, 3, "RAW", "in flight"));
  const fs::path dir = out_dir();
  const fs::path file = dir / "select-dump.json";
  const fs::path svg = dir / "select-dump-out.svg";
  spit(file, hetflow::to_json(recs, {"dev", "async", {}}));
  struct Case {
    std::string args, said;
  };
  for (const Case& c : {
           Case{"--tile nosuchtile", "--tile 'nosuchtile': no request in dump '" + file.string() +
                                         "' has a hazard on that tile or names it; the tiles its hazards are on: 'a', "
                                         "'in flight'"},
           Case{"--from 3 --to 2", "--from 3 is after --to 2: the range of request numbers is empty"},
           Case{"--from 5",
                "no request in dump '" + file.string() + "' is within --from 5; its requests are numbered 1 to 4"},
           Case{"--tile a --from 3", "no request on tile 'a' in dump '" + file.string() +
                                         "' is within --from 3; its requests on that tile are numbered 1 to 2"},
       }) {
    CAPTURE(c.args);
    fs::remove(svg);
    const auto r = cli("dump " + quoted(file) + " " + c.args + " --svg " + quoted(svg));
    INFO(r.output);
    CHECK(r.status == 2);  // the options' mistake, as any on the command line
    CHECK(r.output.find(c.said) != std::string::npos);
    CHECK_FALSE(fs::exists(svg));
  }
  // hetflow report's --from naming no event of the trace is the same kind of mistake (status 1 before).
  const fs::path trace = dir / "select-report.json";
  spit(trace, hetflow::to_trace_json(recs, {"dev", "async", {}}));
  auto wrong = cli("report " + quoted(trace) + " --from 'no such event'");
  INFO(wrong.output);
  CHECK(wrong.status == 2);
  CHECK(wrong.output.find("no event named 'no such event'") != std::string::npos);
  CHECK(cli("report " + quoted(trace) + " --from C").status == 0);
  // What does select something is drawn, and the line says which part by the options given.
  const auto r = cli("dump " + quoted(file) + " --tile 'in flight' --to 3 --dot " + quoted(dir / "select-dump.dot"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("showing 2 of 4 requests (--to 3 --tile in flight)") != std::string::npos);
  // A dump of no request, with no selection, is drawn (empty) as before.
  spit(file, hetflow::to_json({}, {"dev", "async", {}}));
  const auto empty = cli("dump " + quoted(file) + " --dot " + quoted(dir / "select-dump.dot"));
  INFO(empty.output);
  CHECK(empty.status == 0);
  CHECK(cli("dump " + quoted(file) + " --to 9 --dot " + quoted(dir / "select-dump.dot"))
            .output.find("has no requests to select with --to 9") != std::string::npos);
}

TEST_CASE("write_env_dumps writes HETFLOW_DUMP's JSON, DOT and topology, and HETFLOW_TRACE's trace") {
  const fs::path dir = out_dir() / "env";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path dump = dir / "run.json", trace = dir / "run.trace.json";
  ::setenv("HETFLOW_DUMP", dump.c_str(), 1);
  ::setenv("HETFLOW_TRACE", trace.c_str(), 1);
  {
    Controller c(Policy::async);  // recording follows the environment
    REQUIRE(c.recording());
    auto a = c.tile<float>(short_n, "a");
    test::change(c, a, 1.0f);
    c.move_to(a);
    c.move_from(a);
    c.wait_all();
    hetflow::write_env_dumps(c);
    hetflow::write_env_dumps(c);  // a second controller's files must not overwrite the first's
    ::unsetenv("HETFLOW_DUMP");
    ::unsetenv("HETFLOW_TRACE");
  }
  std::vector<std::string> dumps, traces;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find("trace") != std::string::npos)
      traces.push_back(name);
    else if (name.size() > 5 && name.substr(name.size() - 5) == ".json")
      dumps.push_back(name);
  }
  CHECK(dumps.size() >= 2);
  CHECK(traces.size() >= 2);
  REQUIRE(fs::exists(dump));
  const auto [records, info] = hetflow::load_dump(dump.string());
  CHECK(records.size() >= 4);
  CHECK(info.policy == "async");
  CHECK(slurp(dir / "run.dot").rfind("digraph", 0) == 0);
  CHECK(slurp(dir / "run.topology.dot").find("dispatcher") != std::string::npos);
  const auto s = hetflow::summarize_trace_file(trace.string());
  CHECK(s.wall_ns > 0);
  // A path that cannot be written is logged, not thrown.
  ::setenv("HETFLOW_DUMP", (dir / "no-such-dir" / "x.json").c_str(), 1);
  {
    Controller c(Policy::async);
    CHECK_NOTHROW(hetflow::write_env_dumps(c));
    ::unsetenv("HETFLOW_DUMP");
    // Called directly it throws, naming the file and the system's reason.
    CHECK_THROWS_WITH_AS(hetflow::write_dump_json(c, (dir / "no-such-dir" / "x.json").string()),
                         doctest::Contains("no-such-dir/x.json' (No such file or directory)"), hetflow::Error);
  }
}

namespace {
// A program's graph as the engine records it, at any size: frames of H2D → three kernels on two
// kernel lanes → D2H, a host task consuming each frame, and the hazards between them (each kernel
// reads the previous one's output; a frame's H2D waits for the host task two frames back).
std::vector<RequestRecord> generated_program(std::size_t requests) {
  std::vector<RequestRecord> recs;
  std::uint64_t id = 0;
  std::vector<std::uint64_t> consumers;
  while (recs.size() + 6 <= requests) {
    const std::string slot = "frame" + std::to_string(consumers.size() % 2);
    const std::uint64_t h2d = ++id;
    recs.push_back(node(h2d, "H2D", "move_to(" + slot + ")", "H2D", -1, -1));
    if (consumers.size() >= 2) recs.back().in_edges.push_back(edge(consumers[consumers.size() - 2], h2d, "WAR", slot));
    std::uint64_t prev = h2d;
    for (int k = 0; k < 3; ++k) {
      const std::uint64_t kid = ++id;
      recs.push_back(node(kid, "kernel", "sobel_" + std::to_string(k), "kernel" + std::to_string(k % 2), -1, -1));
      recs.back().in_edges.push_back(edge(prev, kid, "RAW", slot));
      if (k == 2) recs.back().in_edges.push_back(edge(h2d, kid, "RAW", slot));  // implied by the chain
      prev = kid;
    }
    const std::uint64_t d2h = ++id;
    recs.push_back(node(d2h, "D2H", "move_from(out" + slot + ")", "D2H", -1, -1));
    recs.back().in_edges.push_back(edge(prev, d2h, "RAW", "out" + slot));
    const std::uint64_t host = ++id;
    recs.push_back(node(host, "host", "consume", "host" + std::to_string(consumers.size() % 3), -1, -1));
    recs.back().in_edges.push_back(edge(d2h, host, "RAW", "out" + slot));
    consumers.push_back(host);
  }
  return recs;
}
}  // namespace

TEST_CASE("select_requests keeps a window of request numbers or one tile's requests, and only their inner edges") {
  const auto recs = generated_program(60);
  hetflow::RequestWindow w;
  w.from = 7, w.to = 18;
  const auto window = hetflow::select_requests(recs, w);
  REQUIRE(window.size() == 12);
  CHECK(window.front().id == 7);
  for (const auto& r : window)
    for (const auto& e : r.in_edges) CHECK((e.from >= 7 && e.from <= 18));
  hetflow::RequestWindow t;
  t.tile = "frame1";
  const auto on_tile = hetflow::select_requests(recs, t);
  CHECK(!on_tile.empty());
  for (const auto& r : on_tile) {
    bool touches = r.name.find("(frame1)") != std::string::npos;
    for (const auto& e : r.in_edges) touches |= e.tile == "frame1";
    for (const auto& o : recs)
      for (const auto& e : o.in_edges) touches |= e.from == r.id && e.tile == "frame1";
    CHECK(touches);
  }
}

TEST_CASE("the lanes layout puts each lane in its own row and every request right of what it waits for") {
  const auto recs = generated_program(30);
  const std::string dot = hetflow::to_dot(recs, {});
  CHECK(dot.find("layout=nop") != std::string::npos);
  auto pos_of = [&](std::uint64_t id) {
    const std::string key = "  n" + std::to_string(id) + " [";
    const auto at = dot.find(key);
    REQUIRE(at != std::string::npos);
    const auto p = dot.find("pos=\"", at);
    REQUIRE(p != std::string::npos);
    double x = 0, y = 0;
    REQUIRE(std::sscanf(dot.c_str() + p + 5, "%lf,%lf", &x, &y) == 2);
    return std::pair{x, y};
  };
  for (const auto& r : recs)
    for (const auto& e : r.in_edges) CHECK(pos_of(e.from).first < pos_of(r.id).first);
  CHECK(pos_of(1).second > pos_of(2).second);  // H2D above the kernel lanes
  CHECK(pos_of(5).second < pos_of(2).second);  // D2H below them
  const std::string graphviz =
      hetflow::to_dot(recs, {}, hetflow::DotOptions{true, hetflow::DotOptions::Layout::graphviz});
  CHECK(graphviz.find("pos=") == std::string::npos);
}

TEST_CASE("hetflow dump renders a 10,000-request graph within 10 s, and windows of it") {
  const fs::path dir = out_dir();
  const fs::path file = dir / "big-dump.json";
  spit(file, hetflow::to_json(generated_program(10'000), {"generated", "async", {}}));
  fs::remove(dir / "big-dump.svg");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = cli("dump " + quoted(file));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  REQUIRE(r.status == 0);
  MESSAGE("rendered 9,996 requests to SVG in " << seconds << " s");
  CHECK(seconds < 10.0);  // the issue's bound; Graphviz's own layout took minutes on far fewer
  CHECK(r.output.find("a large graph: --from/--to") != std::string::npos);
  CHECK(slurp(dir / "big-dump.svg").find("<svg") != std::string::npos);
  r = cli("dump " + quoted(file) + " --from 100 --to 160 --png " + quoted(dir / "big-window.png"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("showing 61 of 9996 requests") != std::string::npos);
  CHECK(slurp(dir / "big-window.png").rfind("\x89PNG", 0) == 0);
  r = cli("dump " + quoted(file) + " --tile frame0 --to 300 --layout graphviz --all-edges --dot " +
          quoted(dir / "tile.dot"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(slurp(dir / "tile.dot").find("frame1") == std::string::npos);
}

TEST_CASE("hetflow run sobel --flow-graph dumps the program's own graph, hetflow dump --flow-graph draws it") {
  const fs::path dir = out_dir();
  const fs::path file = dir / "flow-run.json";
  fs::remove(dir / "flow-run.flow.dot");
  fs::remove(dir / "flow-run.flow.svg");
  auto r =
      cli("run sobel --flow-graph --size 64x32 --frames 6 --slots 2 --policy async --verify --dump " + quoted(file));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(r.output.find("as a flow graph of hetflow's nodes") != std::string::npos);
  CHECK(r.output.find("verify: max relative error") != std::string::npos);
  const std::string flow = slurp(dir / "flow-run.flow.dot");
  // Every frame number comes to load from the input through plain TBB joins with a slot (the slots go
  // back to their pools through plain nodes too, so no edge leads back from consume), then through
  // the kernels in order to consume.
  CHECK(flow.find("host_node\\nload\\n6 message(s)") != std::string::npos);
  CHECK(flow.find("kernel_node\\nsobel_magnitude\\n6 message(s)") != std::string::npos);
  CHECK(flow.find("f0 -> f1 [label=\"6\"]") != std::string::npos);
  CHECK(flow.find("f1 -> f2 [label=\"6\"]") != std::string::npos);
  CHECK(flow.find("f5 -> f6 [label=\"6\"]") != std::string::npos);
  CHECK(flow.find("f6 -> f1") == std::string::npos);

  r = cli("dump " + quoted(file) + " --flow-graph");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(r.output.find("the program's flow graph: 7 nodes, 6 edges") != std::string::npos);
  CHECK(slurp(dir / "flow-run.flow.svg").find("<svg") != std::string::npos);

  // A program without flow nodes: no flow graph in the dump, and --flow-graph says so.
  const fs::path plain = dir / "plain-run.json";
  r = cli("run sobel --size 64x32 --frames 2 --policy async --dump " + quoted(plain));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK_FALSE(fs::exists(dir / "plain-run.flow.dot"));
  CHECK(slurp(plain).find("flow_nodes") == std::string::npos);
  r = cli("dump " + quoted(plain) + " --flow-graph --dot " + quoted(dir / "plain-flow.dot"));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(r.output.find("used no hetflow flow node") != std::string::npos);
}

TEST_CASE("HETFLOW_DUMP beside ControllerOptions::record = false: the log says that controller writes nothing") {
  const fs::path dir = out_dir() / "not-recorded";
  fs::create_directories(dir);
  const fs::path said = dir / "stderr.txt", dump = dir / "x.json";
  fs::remove(dump);
  ::setenv("HETFLOW_DUMP", dump.c_str(), 1);
  {
    // The log goes to stderr: sent to a file while the controller lives.
    std::fflush(stderr);
    const int saved = ::dup(2);
    const int to = ::open(said.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(to >= 0);
    ::dup2(to, 2);
    {
      hetflow::ControllerOptions o;
      o.record = false;
      hetflow::Controller c(o);
    }
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    ::close(to);
  }
  ::unsetenv("HETFLOW_DUMP");
  CHECK(slurp(said).find("this controller writes nothing (ControllerOptions::record = false)") != std::string::npos);
  CHECK_FALSE(fs::exists(dump));
}

TEST_CASE("the dump a controller writes as it ends shows its own wait only where the program's last wait left work") {
  for (const bool program_waits_last : {true, false}) {
    CAPTURE(program_waits_last);
    // A directory each: a process's second controller writes beside the first's name (x.2.json).
    const fs::path dir = out_dir() / (program_waits_last ? "end-wait-after" : "end-wait-before");
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::path dump = dir / "x.json";
    ::setenv("HETFLOW_DUMP", dump.c_str(), 1);
    {
      Controller c(Policy::async);
      auto a = c.tile<float>(short_n, "a");
      c.move_to(a);
      c.wait_all();
      c.move_from(a);
      if (program_waits_last) c.wait_all();
    }
    ::unsetenv("HETFLOW_DUMP");
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".json") dump = entry.path();
    REQUIRE(fs::exists(dump));
    const auto [records, info] = hetflow::load_dump(dump.string());
    const auto waits = std::count_if(records.begin(), records.end(), [](const auto& r) { return r.kind == "wait"; });
    // The program's waits, and the destructor's only where the move_from came after the last one:
    // a second wait_all node after the program's own was a wait for nothing.
    CHECK(waits == 2);
    REQUIRE(!records.empty());
    CHECK(records.back().name == "wait_all");
  }
}
