#pragma once
#include <CLI/CLI.hpp>

namespace hetflow::cli {
// `hetflow dump FILE [--svg [OUT]] [--png [OUT]] [--dot OUT] [--hide-redundant]`: renders a JSON
// graph dump (or a trace, through the dump it embeds) with Graphviz.
void add_dump_command(CLI::App& app);
// `hetflow report TRACE [--json] [--gaps N]`: busy time per lane, overlap, idle gaps and the
// critical path of a Chrome trace written by hetflow.
void add_report_command(CLI::App& app);
}  // namespace hetflow::cli
