#pragma once
#include <CLI/CLI.hpp>

namespace hetflow::cli {
// Each adds its subcommand to `app`; the callback does the work and throws hetflow::Error on failure.
void add_devices_command(CLI::App& app);
}  // namespace hetflow::cli
