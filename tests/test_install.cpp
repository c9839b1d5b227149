// `cmake --install` gives a package an outside project can find_package() and link against.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "process.hpp"

namespace fs = std::filesystem;

// Installs the build into a fresh <build>/<dir>/prefix and returns that prefix.
std::string install_into(const std::string& dir) {
  const fs::path work = fs::path(HETFLOW_TEST_BINARY_DIR) / dir;
  fs::remove_all(work);
  const std::string prefix = (work / "prefix").string();
  auto install = test::run_command("cmake --install " + std::string(HETFLOW_TEST_BINARY_DIR) + " --prefix " + prefix);
  INFO(install.output);
  REQUIRE(install.status == 0);
  return prefix;
}

TEST_CASE("an outside project builds and runs against the installed package") {
  const std::string prefix = install_into("install-test");
  const fs::path work = fs::path(prefix).parent_path();
  CHECK(fs::exists(fs::path(prefix) / "include/hetflow/hetflow.hpp"));
  CHECK(fs::exists(fs::path(prefix) / "share/hetflow/kernels_cl/hetflow_test.cl"));
  CHECK(fs::exists(fs::path(prefix) / "share/doc/hetflow/docs/architecture.md"));
  CHECK(fs::exists(fs::path(prefix) / "share/doc/hetflow/README.md"));

  const std::string consumer_build = (work / "consumer-build").string();
  auto configure = test::run_command("cmake -S " + std::string(HETFLOW_TEST_SOURCE_DIR) + "/tests/consumer -B " +
                                     consumer_build + " -DCMAKE_PREFIX_PATH=" + prefix);
  INFO(configure.output);
  REQUIRE(configure.status == 0);
  auto build = test::run_command("cmake --build " + consumer_build);
  INFO(build.output);
  REQUIRE(build.status == 0);
  // Run away from the source tree so the kernels can only come from the install.
  auto run = test::run_command("cd / && HETFLOW_KERNEL_PATH= " + consumer_build + "/consumer");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(run.output.find("consumer ok") != std::string::npos);
  // The installed library searches the install, never the source tree it was built from.
  auto missing = test::run_command("cd / && HETFLOW_KERNEL_PATH= " + consumer_build + "/consumer no_such_file.cl");
  INFO(missing.output);
  CHECK(missing.output.find("not found; searched:") != std::string::npos);
  CHECK(missing.output.find(prefix + "/share/hetflow/kernels_cl/no_such_file.cl") != std::string::npos);
  CHECK(missing.output.find(std::string(HETFLOW_TEST_SOURCE_DIR) + "/kernels_cl") == std::string::npos);
}

TEST_CASE("the installed hetflow program runs from its prefix alone") {
  const std::string prefix = install_into("install-cli-test");
  // No LD_LIBRARY_PATH and away from the build tree: the library must come from the prefix.
  const std::string env = "cd / && env -u LD_LIBRARY_PATH HETFLOW_KERNEL_PATH= ";
  auto devices = test::run_command(env + prefix + "/bin/hetflow devices");
  INFO(devices.output);
  CHECK(devices.status == 0);
  CHECK(devices.output.find("error while loading shared libraries") == std::string::npos);
  auto run = test::run_command(env + prefix + "/bin/hetflow run sobel --frames 2 --size 128x72");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(run.output.find("bit-identical: yes") != std::string::npos);
  auto ldd = test::run_command("ldd " + prefix + "/bin/hetflow");
  INFO(ldd.output);
  CHECK(ldd.output.find(prefix) != std::string::npos);  // libhetflow resolved inside the prefix
}
