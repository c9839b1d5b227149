// The `hetflow` command-line program: one subcommand per file in this directory.
#include <CLI/CLI.hpp>
#include <hetflow/errors.hpp>
#include <hetflow/settings.hpp>

#include <iostream>
#include <new>
#include <string>

#include "commands.hpp"
#include "dump_report_commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"hetflow — a task-graph engine on the oneTBB flow graph that offloads OpenCL kernels"};
  app.set_version_flag("--version", std::string("hetflow ") + HETFLOW_VERSION);
  app.require_subcommand(1);
  hetflow::cli::add_devices_command(app);
  hetflow::cli::add_run_command(app);
  hetflow::cli::add_dump_command(app);
  hetflow::cli::add_report_command(app);
  try {
    hetflow::check_environment();  // every HETFLOW_* variable, before any command reads one
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    // CLI11 answers an unknown command or option before any subcommand with "A subcommand is
    // required": say what was typed instead.
    if (argc > 1 && app.get_subcommands().empty()) {
      const std::string first = argv[1];
      std::cerr << "hetflow: " << (first.rfind('-', 0) == 0 ? "unknown option '" : "unknown command '") << first
                << "'; the commands are devices, run, dump and report (hetflow --help)\n";
      return 2;
    }
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::bad_alloc&) {
    std::cerr << "hetflow: out of host memory (the problem is too large for this machine)\n";
    return 1;
  } catch (const hetflow::Error& e) {
    std::cerr << "hetflow: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "hetflow: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
