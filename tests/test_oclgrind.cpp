// Oclgrind as a device (src/oclgrind.hpp): HETFLOW_DEVICE=oclgrind registers it with the ICD
// loader, and an out-of-bounds write is reported with the kernel's name instead of killing the
// process as it may on PoCL's CPU device.
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

TEST_CASE("the engine's tests' own pipeline runs on Oclgrind, results as on any device") {
  const auto r = test::run_command("HETFLOW_DEVICE=oclgrind " HETFLOW_CLI_PATH " run sobel --frames 2 --size 64x32 --verify");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("on Oclgrind Simulator") != std::string::npos);
  CHECK(r.output.find("bit-identical: yes") != std::string::npos);
  CHECK(r.output.find("Invalid") == std::string::npos);
}

TEST_CASE("asking for Oclgrind after OpenCL has started without it says how to register it") {
  Controller first(test::options(Policy::async));  // starts the ICD loader with the default vendors
  ControllerOptions o;
  o.device = "oclgrind";
  if (first.device().platform_name == "Oclgrind") return;  // registered by the environment already
  CHECK_THROWS_WITH_AS(Controller{o}, doctest::Contains("had already started in this process without it"), DeviceError);
}
