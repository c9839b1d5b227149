// Oclgrind as a device (src/oclgrind.hpp): HETFLOW_DEVICE=oclgrind registers it with the ICD
// loader, and an out-of-bounds write is reported with the kernel's name instead of killing the
// process as it may on PoCL's CPU device.
#include <filesystem>

#include "process.hpp"
#include "support.hpp"

using namespace hetflow;

TEST_CASE("HETFLOW_DEVICE=oclgrind reports an out-of-bounds write with the kernel's name") {
  const auto r = test::run_command("HETFLOW_DEVICE=oclgrind " HETFLOW_OUT_OF_BOUNDS_PATH);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("device: Oclgrind Simulator") != std::string::npos);
  CHECK(r.output.find("Invalid write of size 4") != std::string::npos);
  CHECK(r.output.find("Kernel: writes_past_the_end") != std::string::npos);
  CHECK(r.output.find("finished") != std::string::npos);
}

// Oclgrind runs commands in whichever thread flushes or waits and aborts when two threads do at
// once (src/driver_lock.hpp): 11 of 30 of these runs aborted before the engine serialized them.
TEST_CASE("a whole pipeline runs on Oclgrind under both policies, with 3 kernel queues, results as on any device") {
  for (int run = 0; run < 8; ++run) {
    CAPTURE(run);
    const auto r = test::run_command("HETFLOW_DEVICE=oclgrind HETFLOW_KERNEL_QUEUES=3 " HETFLOW_CLI_PATH
                                     " run sobel --frames 4 --size 64x32 --verify");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("on Oclgrind Simulator") != std::string::npos);
    CHECK(r.output.find("bit-identical: yes") != std::string::npos);
    CHECK(r.output.find("Invalid") == std::string::npos);
  }
}

TEST_CASE("asking for Oclgrind after OpenCL has started without it says how to register it") {
  Controller first(test::options(Policy::async));  // starts the ICD loader with the default vendors
  ControllerOptions o;
  o.device = "oclgrind";
  if (first.device().platform_name == "Oclgrind") return;  // registered by the environment already
  CHECK_THROWS_WITH_AS(Controller{o}, doctest::Contains("had already started in this process without it"), DeviceError);
}

TEST_CASE("the CLI registers Oclgrind wherever a selection names it: hetflow devices, a loop's second device") {
  auto r = test::run_command("HETFLOW_DEVICE=oclgrind " HETFLOW_CLI_PATH " devices");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find(":0 Oclgrind Simulator — first device whose name or platform contains 'oclgrind'") !=
        std::string::npos);
  r = test::run_command(HETFLOW_CLI_PATH " run mandelbrot --size 32 --calls 1 --devices portable,oclgrind --verify");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("+ Oclgrind Simulator (Oclgrind)") != std::string::npos);
}

TEST_CASE("registering Oclgrind renumbers no other device: it comes last, and 0:0 names what it named before") {
  auto plain = test::run_command(HETFLOW_CLI_PATH " devices");
  auto with = test::run_command("HETFLOW_DEVICE=oclgrind " HETFLOW_CLI_PATH " devices");
  INFO(plain.output);
  INFO(with.output);
  REQUIRE(plain.status == 0);
  REQUIRE(with.status == 0);
  // "    0:0  CPU         pthread-..." (the default marker aside): the same line in both lists.
  const auto at = plain.output.find("0:0  ");
  REQUIRE(at != std::string::npos);
  const std::string first = plain.output.substr(at, plain.output.find('\n', at) - at);
  CHECK(with.output.find(first) != std::string::npos);
  CHECK(with.output.find("0:0  GPU         Oclgrind") == std::string::npos);
  // And a loop over 0:0 and Oclgrind runs on both, not on Oclgrind twice.
  auto run = test::run_command(HETFLOW_CLI_PATH " run mandelbrot --size 32 --calls 1 --devices 0:0,oclgrind");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(run.output.find("Oclgrind Simulator (Oclgrind) + Oclgrind") == std::string::npos);
  CHECK(run.output.find("+ Oclgrind Simulator (Oclgrind)") != std::string::npos);
}

TEST_CASE("a process that registered Oclgrind leaves no hetflow-icd directory behind") {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / "hetflow-oclgrind-tmpdir";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string env = "TMPDIR=" + tmp.string() + " ";
  auto r = test::run_command(env + "HETFLOW_DEVICE=oclgrind " HETFLOW_CLI_PATH " devices");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("Oclgrind Simulator") != std::string::npos);
  r = test::run_command(env + HETFLOW_CLI_PATH " run sobel --size 32x16 --frames 2 --policy async --device oclgrind");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("on Oclgrind Simulator") != std::string::npos);
  for (const auto& entry : fs::directory_iterator(tmp))
    if (entry.path().filename().string().rfind("hetflow-icd-", 0) == 0) FAIL_CHECK("left behind: " << entry.path());
  fs::remove_all(tmp);
}
