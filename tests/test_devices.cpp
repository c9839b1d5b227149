// Devices: listing, every selection form, and the errors for selections that match nothing and
// for a machine with no OpenCL platform.
#include <doctest/doctest.h>
#include <hetflow/hetflow.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "process.hpp"

using namespace hetflow;

namespace {
DeviceInfo fake(unsigned p, unsigned d, cl_device_type type, std::string name, std::string platform) {
  DeviceInfo info;
  info.platform_index = p;
  info.device_index = d;
  info.type = type;
  info.name = std::move(name);
  info.platform_name = std::move(platform);
  return info;
}
// Pure selection logic over a made-up machine: a CPU platform listed before a GPU platform.
const std::vector<DeviceInfo> machine = {
    fake(0, 0, CL_DEVICE_TYPE_CPU, "pthread-skylake", "Portable Computing Language"),
    fake(1, 0, CL_DEVICE_TYPE_GPU, "NVIDIA H200", "NVIDIA CUDA"),
    fake(1, 1, CL_DEVICE_TYPE_GPU, "NVIDIA H100", "NVIDIA CUDA"),
};
}  // namespace

TEST_CASE("selection forms over a listed machine") {
  CHECK(select_device_from(machine, "", "default").device.name == "NVIDIA H200");  // first GPU of any platform
  CHECK(select_device_from(machine, "", "default").reason.find("first GPU") != std::string::npos);
  CHECK(select_device_from(machine, "gpu", "test").device.name == "NVIDIA H200");
  CHECK(select_device_from(machine, "GPU", "test").device.name == "NVIDIA H200");
  CHECK(select_device_from(machine, "cpu", "test").device.name == "pthread-skylake");
  CHECK(select_device_from(machine, "1:1", "test").device.name == "NVIDIA H100");
  CHECK(select_device_from(machine, "h100", "test").device.name == "NVIDIA H100");          // device name substring
  CHECK(select_device_from(machine, "portable", "test").device.name == "pthread-skylake");  // platform name substring
  const std::vector<DeviceInfo> cpu_only(machine.begin(), machine.begin() + 1);
  CHECK(select_device_from(cpu_only, "", "default").device.name == "pthread-skylake");
  CHECK(select_device_from(cpu_only, "", "default").reason.find("no GPU") != std::string::npos);
}

TEST_CASE("Oclgrind, which reports every device type, is chosen by name or number only") {
  // Registered first for a checking controller, it must not take the other controllers' defaults.
  const auto all = CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR | CL_DEVICE_TYPE_DEFAULT;
  std::vector<DeviceInfo> with_oclgrind = {fake(0, 0, all, "Oclgrind Simulator", "Oclgrind")};
  with_oclgrind.insert(with_oclgrind.end(), machine.begin(), machine.end());
  CHECK(select_device_from(with_oclgrind, "", "default").device.name == "NVIDIA H200");
  CHECK(select_device_from(with_oclgrind, "gpu", "test").device.name == "NVIDIA H200");
  CHECK(select_device_from(with_oclgrind, "cpu", "test").device.name == "pthread-skylake");
  CHECK(select_device_from(with_oclgrind, "oclgrind", "test").device.name == "Oclgrind Simulator");
  CHECK(select_device_from(with_oclgrind, "0:0", "test").device.name == "Oclgrind Simulator");
  CHECK_THROWS_WITH_AS(select_device_from(with_oclgrind, "accelerator", "test"),
                       doctest::Contains("chosen only by name or number"), DeviceError);
  const std::vector<DeviceInfo> cpu_and_oclgrind = {with_oclgrind[0], with_oclgrind[1]};
  CHECK(select_device_from(cpu_and_oclgrind, "", "default").device.name == "pthread-skylake");
  const std::vector<DeviceInfo> oclgrind_only = {with_oclgrind[0]};
  CHECK(select_device_from(oclgrind_only, "", "default").device.name == "Oclgrind Simulator");
}

TEST_CASE("a malformed platform:device pair is a DeviceError, not a std::out_of_range") {
  const auto devices = list_devices();
  for (const char* spec : {"0:", "99999999999999999999999:0", "0:0:0", "0:0:7"}) {
    CAPTURE(spec);
    CHECK_THROWS_WITH_AS(select_device_from(devices, spec, "the test"),
                         doctest::Contains("is not a platform:device pair of numbers"), DeviceError);
  }
  CHECK(devices.front().max_alloc_bytes > 0);
  CHECK(devices.front().max_work_item_sizes[0] > 0);
}

TEST_CASE("a selection that matches nothing lists what exists") {
  for (const char* spec : {"accelerator", "2:0", "1:7", "radeon"}) {
    CAPTURE(spec);
    try {
      select_device_from(machine, spec, "HETFLOW_DEVICE");
      FAIL("no error");
    } catch (const DeviceError& e) {
      const std::string msg = e.what();
      CHECK(msg.find(spec) != std::string::npos);
      CHECK(msg.find("HETFLOW_DEVICE") != std::string::npos);
      CHECK(msg.find("NVIDIA H100") != std::string::npos);
      CHECK(msg.find("pthread-skylake") != std::string::npos);
    }
  }
}

TEST_CASE("the real machine lists devices and every selection form works on it") {
  const auto devices = list_devices();
  REQUIRE(!devices.empty());
  for (const auto& d : devices) {
    CHECK(!d.name.empty());
    CHECK(d.compute_units > 0);
    CHECK(d.global_mem_bytes > 0);
    CHECK(d.version.rfind("OpenCL", 0) == 0);
  }
  const auto& first = devices.front();
  CHECK(select_device(first.id()).device.name == first.name);
  CHECK(select_device(first.type_name()).device.type == first.type);
  CHECK(select_device(first.name.substr(0, 5)).device.name.find(first.name.substr(0, 5)) != std::string::npos);
  CHECK_THROWS_AS(select_device("no-such-device-anywhere"), DeviceError);

  ::setenv("HETFLOW_DEVICE", first.id().c_str(), 1);
  CHECK(select_device().reason.find("HETFLOW_DEVICE") != std::string::npos);
  ::setenv("HETFLOW_DEVICE", "no-such-device-anywhere", 1);
  CHECK_THROWS_WITH_AS(select_device(), doctest::Contains("HETFLOW_DEVICE"), DeviceError);
  ::unsetenv("HETFLOW_DEVICE");
}

TEST_CASE("hetflow devices prints the devices and the default with its reason") {
  const auto out = test::run_command(std::string(HETFLOW_CLI_PATH) + " devices");
  CHECK(out.status == 0);
  CHECK(out.output.find("Default device (*)") != std::string::npos);
  CHECK(out.output.find(list_devices().front().name) != std::string::npos);
  CHECK(out.output.find("compute units") != std::string::npos);
  CHECK(out.output.find("host-unified memory") != std::string::npos);
}

TEST_CASE("no OpenCL platform is a clear error with the fix, not a crash") {
  // The ICD loader reads vendor files from OCL_ICD_VENDORS: an empty directory means no platform.
  const auto out =
      test::run_command("OCL_ICD_VENDORS=/nonexistent-hetflow-vendors " + std::string(HETFLOW_CLI_PATH) + " devices");
  CHECK(out.status == 1);
  CHECK(out.output.find("no OpenCL platform found") != std::string::npos);
  CHECK(out.output.find("pocl-opencl-icd") != std::string::npos);
}

TEST_CASE("a platform whose driver cannot start a device says so, not that no driver is installed") {
  // PoCL with a cache directory it cannot create reports no device (a user without a writable HOME).
  const auto r =
      test::run_command("POCL_CACHE_DIR=/proc/self/hetflow-no-such " + std::string(HETFLOW_CLI_PATH) + " devices");
  CHECK(r.status == 1);
  CHECK(r.output.find("OpenCL platforms were found (Portable Computing Language) but none reports a device") !=
        std::string::npos);
  CHECK(r.output.find("POCL_CACHE_DIR") != std::string::npos);
  CHECK(r.output.find("found no vendor driver") == std::string::npos);
}

TEST_CASE("hetflow --help and --version") {
  auto help = test::run_command(std::string(HETFLOW_CLI_PATH) + " --help");
  CHECK(help.status == 0);
  CHECK(help.output.find("devices") != std::string::npos);
  auto version = test::run_command(std::string(HETFLOW_CLI_PATH) + " --version");
  CHECK(version.status == 0);
  CHECK(version.output.find("hetflow ") != std::string::npos);
}
