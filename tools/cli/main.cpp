// The `hetflow` command-line program: one subcommand per file in this directory.
#include <CLI/CLI.hpp>
#include <hetflow/errors.hpp>
#include <hetflow/settings.hpp>

#include <iostream>

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
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const hetflow::Error& e) {
    std::cerr << "hetflow: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "hetflow: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
