// `hetflow dump`: renders a graph dump with Graphviz's `dot`.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hetflow/dump.hpp>
#include <hetflow/errors.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/dump_reader.hpp"
#include "dump_report_commands.hpp"
#include "numbers.hpp"
#include "removed_on_signal.hpp"

extern char** environ;

namespace hetflow::cli {
namespace {

struct ScopedTempFile {
  std::string path;
  ~ScopedTempFile() { ::unlink(path.c_str()); }
};

// Writes all of `text` to `fd`, through interrupted and partial writes, and closes it.
void write_and_close(int fd, const std::string& text, const std::string& path) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw Error("cannot write the temporary DOT file '" + path + "': " + std::strerror(errno));
    }
    done += std::size_t(n);
  }
  ::close(fd);
}

struct Spawned {
  pid_t pid;
  int output;  // the read end of a pipe that has the child's stdout and stderr
};

// dot's stdout and stderr both go into the pipe: what it says is the message when it fails.
Spawned spawn_dot(const std::string& type, const std::string& out, const std::string& dot_file,
                  const std::string& source) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw Error("pipe failed: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 2);
  std::vector<char*> argv{const_cast<char*>("dot"),       const_cast<char*>(type.c_str()),     const_cast<char*>("-o"),
                          const_cast<char*>(out.c_str()), const_cast<char*>(dot_file.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, "dot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    if (rc == ENOENT)
      throw Error("Graphviz 'dot' was not found on PATH: install graphviz to render '" + source +
                  "', or write the DOT with --dot and render it elsewhere");
    throw Error("could not run Graphviz 'dot': " + std::string(std::strerror(rc)));
  }
  return {pid, pipefd[0]};
}

// Reads `fd` to its end and closes it.
std::string read_all_and_close(int fd) {
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, std::size_t(n));
  }
  ::close(fd);
  return text;
}

int wait_for_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Runs `dot -T<format> -o <out>` on `dot_text`. The DOT goes through a temporary file rather than
// a pipe into dot's stdin, so that reading dot's messages can never deadlock against writing.
void render(const std::string& dot_text, const std::string& format, const std::string& out, const std::string& source) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmp = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/hetflow-dump-XXXXXX.dot";
  const int fd = ::mkstemps(tmp.data(), 4);
  if (fd < 0) throw Error("cannot create a temporary file for dot: " + std::string(std::strerror(errno)));
  const ScopedTempFile remove_tmp{tmp};
  const RemovedOnSignal remove_if_interrupted{tmp};  // a destructor does not run when a signal ends the process
  write_and_close(fd, dot_text, tmp);

  const std::string type = "-T" + format;
  const Spawned dot = spawn_dot(type, out, tmp, source);
  const std::string messages = read_all_and_close(dot.output);
  const int status = wait_for_exit(dot.pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                            : "signal " + std::to_string(WTERMSIG(status));
  throw Error("Graphviz 'dot " + type + "' failed (" + how + ") rendering '" + source + "' to '" + out + "'" +
              (messages.empty() ? std::string() : ":\n" + messages));
}

// "run.json" → "run.svg"; without a .json extension the new one is appended.
std::string beside(const std::string& file, const std::string& ext) {
  const auto slash = file.find_last_of('/');
  const auto dot = file.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return (has_ext && file.substr(dot) == ".json" ? file.substr(0, dot) : file) + ext;
}

std::string counted(std::size_t n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

struct DumpArgs {
  std::string file, svg, png, dot, layout = "lanes";
  bool all_edges = false, hide_redundant = false, flow_graph = false;
  RequestWindow window;
  CLI::Option *svg_opt = nullptr, *png_opt = nullptr, *dot_opt = nullptr;
};

// The selection as the user gave it: "--from 5 --to 9 --tile a" (only the options given).
std::string window_text(const RequestWindow& w) {
  std::string text;
  if (w.from != 0) text += "--from " + std::to_string(w.from);
  if (w.to != UINT64_MAX) text += std::string(text.empty() ? "" : " ") + "--to " + std::to_string(w.to);
  if (!w.tile.empty()) text += std::string(text.empty() ? "" : " ") + "--tile " + w.tile;
  return text;
}

// "'a', 'b', 'c'" (a tile's name may have blanks), the first `most` of them, then how many in all.
std::string listed(const std::set<std::string>& names, std::size_t most = 20) {
  std::string text;
  std::size_t n = 0;
  for (const auto& name : names) {
    if (n++ == most) return text + ", ... (" + std::to_string(names.size()) + " in all)";
    text += (text.empty() ? "'" : ", '") + name + "'";
  }
  return text;
}

std::string numbered(const std::vector<RequestRecord>& records) {
  const auto [lo, hi] = std::minmax_element(records.begin(), records.end(),
                                            [](const RequestRecord& x, const RequestRecord& y) { return x.id < y.id; });
  return "numbered " + std::to_string(lo->id) + " to " + std::to_string(hi->id);
}

// An empty selection is the user's mistake (a misspelt tile, a range past the last request, --from
// after --to), not a graph to draw: an empty SVG would look like a program that made no requests.
void check_selection(const std::vector<RequestRecord>& all, const std::vector<RequestRecord>& selected,
                     const RequestWindow& w, const std::string& file) {
  if (!selected.empty() || window_text(w).empty()) return;  // a dump of no requests, drawn whole, is no mistake
  if (w.from > w.to)
    throw UsageError("--from " + std::to_string(w.from) + " is after --to " + std::to_string(w.to) +
                     ": the range of request numbers is empty");
  if (all.empty()) throw UsageError("dump '" + file + "' has no requests to select with " + window_text(w));
  RequestWindow tile_only;
  tile_only.tile = w.tile;
  const std::vector<RequestRecord> on_tile = w.tile.empty() ? all : select_requests(all, tile_only);
  if (on_tile.empty()) {
    std::set<std::string> tiles;
    for (const auto& r : all)
      for (const auto& e : r.in_edges)
        if (!e.tile.empty()) tiles.insert(e.tile);
    throw UsageError("--tile '" + w.tile + "': no request in dump '" + file +
                     "' has a hazard on that tile or names it; " +
                     (tiles.empty() ? std::string("its requests have no hazard on any tile")
                                    : "the tiles its hazards are on: " + listed(tiles)));
  }
  RequestWindow range = w;
  range.tile.clear();
  throw UsageError("no request " + (w.tile.empty() ? std::string() : "on tile '" + w.tile + "' ") + "in dump '" + file +
                   "' is within " + window_text(range) + "; its requests " +
                   (w.tile.empty() ? std::string() : "on that tile ") + "are " + numbered(on_tile));
}

void run_dump(const DumpArgs& a) {
  const auto [all_records, info] = load_dump(a.file);
  const std::vector<RequestRecord> records = select_requests(all_records, a.window);
  check_selection(all_records, records, a.window, a.file);
  if (records.size() < all_records.size())
    std::printf("%s: showing %zu of %zu requests (%s)\n", a.file.c_str(), records.size(), all_records.size(),
                window_text(a.window).c_str());
  DotOptions options;
  options.hide_redundant = !a.all_edges;
  options.layout = a.layout == "graphviz" ? DotOptions::Layout::graphviz : DotOptions::Layout::lanes;
  // --flow-graph: the program's own nodes and the paths its messages took, beside its files (run.flow.svg).
  const std::string dot = a.flow_graph ? to_flow_dot(all_records, info) : to_dot(records, info, options);
  const char* ext_prefix = a.flow_graph ? ".flow" : "";

  std::map<std::string, std::size_t> kinds;
  std::size_t edges = 0, failed = 0, cancelled = 0, pending = 0;
  for (const auto& r : records) {
    ++kinds[r.kind];
    edges += r.in_edges.size();
    failed += r.status == "failed";
    cancelled += r.status == "cancelled";
    pending += r.status == "pending";
  }
  std::string by_kind;
  for (const auto& [k, n] : kinds) by_kind += (by_kind.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  std::string hidden;
  if (options.hide_redundant)
    hidden = " (" + counted(redundant_edges(records).size(), "node pair") + " hidden as implied by others)";
  std::printf("%s: %s (%s), %s%s, %zu failed, %zu cancelled, %zu pending — %s, %s\n", a.file.c_str(),
              counted(records.size(), "node").c_str(), by_kind.empty() ? "none" : by_kind.c_str(),
              counted(edges, "edge").c_str(), hidden.c_str(), failed, cancelled, pending,
              info.device.empty() ? "unknown device" : info.device.c_str(),
              info.policy.empty() ? "unknown policy" : info.policy.c_str());
  if (records.size() > 2000)
    std::printf("a large graph: --from/--to (request numbers) or --tile NAME pick a part of it to read\n");
  if (!info.flow_nodes.empty())
    std::printf("the program's flow graph: %s, %s%s\n", counted(info.flow_nodes.size(), "node").c_str(),
                counted(info.flow_edges.size(), "edge").c_str(), a.flow_graph ? "" : " (--flow-graph draws it)");
  else if (a.flow_graph)
    std::printf("the program used no hetflow flow node or loop: its flow graph is empty\n");
  for (const auto& n : info.flow_nodes)  // a loop's scheduler at its last call's end
    if (!n.state.empty())
      std::printf("%s '%s' after %s: %s\n", n.kind.c_str(), n.name.c_str(),
                  counted(std::size_t(n.messages), "call").c_str(), n.state.c_str());
  std::fflush(stdout);  // before any error about rendering, which goes to stderr

  const bool none = a.svg_opt->count() == 0 && a.png_opt->count() == 0 && a.dot_opt->count() == 0;
  if (a.dot_opt->count()) {
    detail::write_text_file(a.dot, dot, "DOT");
    std::printf("wrote %s\n", a.dot.c_str());
  }
  if (none || a.svg_opt->count()) {
    const std::string out = a.svg.empty() ? beside(a.file, std::string(ext_prefix) + ".svg") : a.svg;
    render(dot, "svg", out, a.file);
    std::printf("wrote %s\n", out.c_str());
  }
  if (a.png_opt->count()) {
    const std::string out = a.png.empty() ? beside(a.file, std::string(ext_prefix) + ".png") : a.png;
    render(dot, "png", out, a.file);
    std::printf("wrote %s\n", out.c_str());
  }
}

}  // namespace

void add_dump_command(CLI::App& app) {
  auto args = std::make_shared<DumpArgs>();
  auto* cmd = app.add_subcommand("dump", "Render a task-graph dump (HETFLOW_DUMP's JSON, or a trace) with Graphviz");
  cmd->add_option("file", args->file, "JSON graph dump (or a trace written by hetflow)")->required();
  args->svg_opt =
      cmd->add_option("--svg", args->svg, "Write SVG (default: FILE with .svg; the default output)")->expected(0, 1);
  args->png_opt = cmd->add_option("--png", args->png, "Write PNG (default: FILE with .png)")->expected(0, 1);
  args->dot_opt = cmd->add_option("--dot", args->dot, "Write the Graphviz DOT source");
  cmd->add_flag("--all-edges", args->all_edges,
                "Show every hazard edge; by default an edge implied by others (A→C beside A→B→C) is hidden");
  cmd->add_flag("--hide-redundant", args->hide_redundant, "The default now (kept for old scripts)");
  cmd->add_option("--layout", args->layout,
                  "lanes: a row per lane, a column per step (default; fast at any size); graphviz: dot's own layout")
      ->check(CLI::IsMember({"lanes", "graphviz"}));
  cmd->add_flag("--flow-graph", args->flow_graph,
                "Draw the program's own flow graph instead (its hetflow nodes and loops, the paths its messages "
                "took, their counts; default output FILE with .flow.svg)");
  cmd->add_option("--from", args->window.from, "Only requests numbered from this one on")
      ->transform(whole_number(0, UINT64_MAX));
  cmd->add_option("--to", args->window.to, "Only requests numbered up to this one")
      ->transform(whole_number(0, UINT64_MAX));
  cmd->add_option("--tile", args->window.tile, "Only requests with a hazard on this tile (or that name it)");
  cmd->callback([args] { run_dump(*args); });
}

}  // namespace hetflow::cli
