#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <hetflow/opencl.hpp>

namespace hetflow {

// One OpenCL device as hetflow sees it.
struct DeviceInfo {
  unsigned platform_index = 0;
  unsigned device_index = 0;
  std::string platform_name;
  std::string platform_version;
  std::string name;
  std::string vendor;
  std::string version;  // CL_DEVICE_VERSION, e.g. "OpenCL 3.0 CUDA"
  std::string driver_version;
  cl_device_type type = 0;
  unsigned compute_units = 0;
  std::uint64_t global_mem_bytes = 0;
  std::uint64_t local_mem_bytes = 0;
  std::size_t max_work_group_size = 0;
  std::array<std::size_t, 3> max_work_item_sizes{0, 0, 0};
  std::uint64_t max_alloc_bytes = 0;  // CL_DEVICE_MAX_MEM_ALLOC_SIZE: the largest tile
  bool host_unified_memory = false;
  // A global size need not be a multiple of the work-group size (OpenCL 2.x; 3.0's optional
  // CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT), for programs built for OpenCL C 2.0 or later. Where
  // false, Controller::launch refuses such a range (neither PoCL nor NVIDIA has them).
  bool non_uniform_work_groups = false;
  cl::Platform platform;
  cl::Device device;

  std::string type_name() const;  // "GPU", "CPU", "ACCELERATOR", ...
  std::string id() const;         // "P:D"
};

// Every device of every platform the ICD loader finds. Throws DeviceError, saying how to fix it,
// when there is no OpenCL platform at all.
std::vector<DeviceInfo> list_devices();

// The outcome of a device selection: the device and a sentence saying why it was chosen.
struct DeviceChoice {
  DeviceInfo device;
  std::string reason;
};

// Selects a device from `spec`: "gpu", "cpu", "accelerator", "P:D" (platform and device index) or
// a case-insensitive substring of the device or platform name. An empty spec means the
// HETFLOW_DEVICE environment variable, and if that is unset too, the default: the first GPU of any
// platform, else the first device. A spec that matches nothing throws DeviceError listing what
// exists. `origin` names who gave `spec` in that error and in the reason ("--device", say).
DeviceChoice select_device(std::string_view spec = {}, std::string_view origin = "the program");

// The same choice made from an explicit device list (what select_device uses; testable alone).
DeviceChoice select_device_from(const std::vector<DeviceInfo>& devices, std::string_view spec, std::string_view source);

}  // namespace hetflow
