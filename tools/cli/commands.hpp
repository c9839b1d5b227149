#pragma once
#include <CLI/CLI.hpp>
#include <hetflow/controller.hpp>

#include <string>

namespace hetflow::cli {
// Each adds its subcommand to `app`; the callback does the work and throws hetflow::Error on failure.
void add_devices_command(CLI::App& app);
void add_run_command(CLI::App& app);

// Writes what --dump / --trace ask for (nothing for empty paths).
void write_requested_dumps(const hetflow::Controller& c, const std::string& dump, const std::string& trace);
}  // namespace hetflow::cli
