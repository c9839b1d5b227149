// HETFLOW_DUMP / HETFLOW_TRACE: what a controller writes when it goes away, so that any program
// can be inspected without changing its code. Runs from a destructor: nothing may escape.
#include <hetflow/controller.hpp>
#include <hetflow/dump.hpp>
#include <hetflow/trace.hpp>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>

#include "log.hpp"
#include "settings.hpp"

namespace hetflow {
namespace {

// "run.json" → ("run", ".json"); a name without an extension keeps it empty.
std::pair<std::string, std::string> split_extension(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1 || dot == 0)
    return {path, ""};
  return {path.substr(0, dot), path.substr(dot)};
}

// The nth controller of the process (n ≥ 2) gets "run.n.json", so none overwrites another's.
std::string numbered(const std::string& path, int n) {
  if (n <= 1) return path;
  const auto [stem, ext] = split_extension(path);
  return stem + "." + std::to_string(n) + ext;
}

std::atomic<std::size_t> files_not_written{0};

template <class F>
void attempt(const char* what, const std::string& path, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    ++files_not_written;
    try {
      log().error("could not write the {} '{}': {}", what, path, e.what());
    } catch (...) {
    }
  } catch (...) {
    ++files_not_written;
    try {
      log().error("could not write the {} '{}'", what, path);
    } catch (...) {
    }
  }
}

std::atomic<int> controllers_written{0};

}  // namespace

std::size_t env_dump_failures() noexcept { return files_not_written.load(); }

std::string dump_companion(const std::string& dump_path, const char* suffix) {
  const auto [stem, ext] = split_extension(dump_path);
  return (ext == ".json" ? stem : dump_path) + suffix;
}

void write_env_dumps(const Controller& c) noexcept {
  const auto dump = detail::env_text("HETFLOW_DUMP");
  const auto trace = detail::env_text("HETFLOW_TRACE");
  if (!dump && !trace) return;
  const int n = ++controllers_written;
  if (dump) {
    const std::string path = numbered(*dump, n);
    attempt("graph dump", path, [&] { write_dump_json(c, path); });
    attempt("graph dump (DOT)", dump_companion(path, ".dot"), [&] { write_dump_dot(c, dump_companion(path, ".dot")); });
    attempt("controller topology", dump_companion(path, ".topology.dot"),
            [&] { detail::write_text_file(dump_companion(path, ".topology.dot"), c.topology_dot(), "topology DOT"); });
    // The program's own flow graph, when its nodes or loops made requests (docs/flow-nodes.md).
    attempt("program's flow graph", dump_companion(path, ".flow.dot"),
            [&] { write_flow_dot(c, dump_companion(path, ".flow.dot")); });
  }
  if (trace) {
    const std::string path = numbered(*trace, n);
    attempt("trace", path, [&] { write_trace(c, path); });
  }
}

}  // namespace hetflow
