#include <hetflow/dump.hpp>

#include <cstdio>

#include "commands.hpp"

namespace hetflow::cli {

void write_requested_dumps(const hetflow::Controller& c, const std::string& dump, const std::string& trace) {
  if (!dump.empty()) {
    write_dump_json(c, dump);
    const std::string dot = dump_companion(dump, ".dot");
    write_dump_dot(c, dot);
    std::printf("task graph: %s (Graphviz: %s)\n", dump.c_str(), dot.c_str());
    if (const std::string flow = dump_companion(dump, ".flow.dot"); write_flow_dot(c, flow))
      std::printf("the program's flow graph: %s\n", flow.c_str());
  }
  if (!trace.empty()) {
    write_trace(c, trace);
    std::printf("timeline: %s (open in https://ui.perfetto.dev or chrome://tracing; summary: hetflow report %s)\n",
                trace.c_str(), trace.c_str());
  }
}

}  // namespace hetflow::cli
