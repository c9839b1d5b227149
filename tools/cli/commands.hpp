#pragma once
#include <CLI/CLI.hpp>
#include <hetflow/controller.hpp>
#include <hetflow/errors.hpp>

#include <cstdio>
#include <exception>
#include <string>

namespace hetflow::cli {
// Each adds its subcommand to `app`; the callback does the work and throws hetflow::Error on failure.
void add_devices_command(CLI::App& app);
void add_run_command(CLI::App& app);

// Writes what --dump / --trace ask for (nothing for empty paths).
void write_requested_dumps(const hetflow::Controller& c, const std::string& dump, const std::string& trace);

// run()'s result; if it throws, what --dump / --trace ask for is written first (a dump that cannot be
// written is said on stderr, and the run's own error is the one thrown).
template <class Run>
auto with_dumps_of_a_failure(const hetflow::Controller& c, const std::string& dump, const std::string& trace, Run&& run)
    -> decltype(run()) {
  try {
    return run();
  } catch (...) {
    if (!dump.empty() || !trace.empty()) {
      try {
        std::fprintf(stderr, "hetflow: the run failed; its dumps:\n");
        write_requested_dumps(c, dump, trace);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "hetflow: the failed run's dumps could not be written: %s\n", e.what());
      }
    }
    throw;
  }
}

// run()'s result, with a tile too large for the device made an Error: that is the device's limit
// (exit status 1), where a UsageError is a mistake on the command line (2).
template <class Run>
auto device_limits_are_the_runs(Run&& run) -> decltype(run()) {
  try {
    return run();
  } catch (const hetflow::TooLargeForDevice& e) {
    throw hetflow::Error(e.what());
  }
}
}  // namespace hetflow::cli
