// The `hetflow` command-line program: one subcommand per file in this directory.
#include <CLI/CLI.hpp>
#include <hetflow/errors.hpp>
#include <hetflow/settings.hpp>

#include <iostream>
#include <new>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "dump_report_commands.hpp"

namespace {
// One status for every mistake on the command line: CLI11 gives each kind its own (105 to 109),
// which a script cannot tell from a run's failure without knowing CLI11's numbering.
constexpr int kUsageError = 2;

// CLI11 prints the message (or the help); --help and --version stay successes.
int exit_for(const CLI::App& app, const CLI::Error& e) {
  const int code = app.exit(e);
  return code == 0 ? 0 : kUsageError;
}

bool asks_for_help_or_version(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return false;  // what follows is not an option
    if (arg == "-h" || arg == "--help" || arg == "--version") return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hetflow — a task-graph engine on the oneTBB flow graph that offloads OpenCL kernels"};
  app.set_version_flag("--version", std::string("hetflow ") + HETFLOW_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 on success (and for --help, --version); 2 when the command line is wrong (an unknown command or "
      "option, a missing or malformed value, options that conflict); 1 when the run, the device or a file fails "
      "(including a device selection that matches no device here, or a malformed HETFLOW_* variable).");
  hetflow::cli::add_devices_command(app);
  hetflow::cli::add_run_command(app);
  hetflow::cli::add_dump_command(app);
  hetflow::cli::add_report_command(app);
  // Every HETFLOW_* variable, before any command reads one; not for --help and --version, which
  // answer whatever the environment holds (read off the command line before CLI11 parses it).
  if (!asks_for_help_or_version(argc, argv)) {
    try {
      hetflow::check_environment();
    } catch (const hetflow::Error& e) {
      // Not the command line's mistake: the environment was set elsewhere, so not kUsageError.
      std::cerr << "hetflow: " << e.what() << "\n";
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    // CLI11 answers an unknown command or option before any subcommand with "A subcommand is
    // required": say what was typed instead.
    if (argc > 1 && app.get_subcommands().empty()) {
      const std::string first = argv[1];
      std::cerr << "hetflow: " << (first.rfind('-', 0) == 0 ? "unknown option '" : "unknown command '") << first
                << "'; the commands are devices, run, dump and report (hetflow --help)\n";
      return kUsageError;
    }
    return exit_for(app, e);
  } catch (const CLI::ParseError& e) {
    return exit_for(app, e);
  } catch (const std::bad_alloc&) {
    std::cerr << "hetflow: out of host memory (the problem is too large for this machine)\n";
    return 1;
  } catch (const hetflow::UsageError& e) {  // the CLI's own refusals of what was typed (and the library's)
    std::cerr << "hetflow: " << e.what() << "\n";
    return kUsageError;
  } catch (const hetflow::Error& e) {
    std::cerr << "hetflow: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "hetflow: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
