#include <hetflow/device.hpp>
#include <hetflow/errors.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "cl_call.hpp"
#include "oclgrind.hpp"
#include "settings.hpp"

namespace hetflow {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

std::string trimmed(std::string s) {
  // Some drivers pad names with spaces or a trailing NUL.
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  auto first = s.find_first_not_of(' ');
  return first == std::string::npos ? std::string{} : s.substr(first);
}

std::string describe_all(const std::vector<DeviceInfo>& devices) {
  std::ostringstream os;
  for (const auto& d : devices)
    os << "\n  " << d.id() << "  " << d.type_name() << "  " << d.name << "  (platform: " << d.platform_name << ")";
  return os.str();
}

const char* no_platform_help =
    "no OpenCL platform found: the ICD loader (libOpenCL.so) found no vendor driver. "
    "Install one (on Debian: `apt-get install pocl-opencl-icd` for the CPU, or your GPU vendor's "
    "OpenCL ICD) and check that /etc/OpenCL/vendors/ holds its .icd file "
    "(or point OCL_ICD_VENDORS at the directory that does).";

// `version`: CL_DEVICE_VERSION, "OpenCL <major>.<minor> <vendor text>".
bool has_non_uniform_work_groups(cl_device_id dev, const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "OpenCL %d.%d", &major, &minor) != 2 || major < 2) return false;
  if (major == 2) return true;  // required of 2.x devices
  cl_bool supported = CL_FALSE;
  return clGetDeviceInfo(dev, CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT, sizeof supported, &supported, nullptr) ==
             CL_SUCCESS &&
         supported == CL_TRUE;
}

}  // namespace

std::string DeviceInfo::type_name() const {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "ACCELERATOR";
  if (type & CL_DEVICE_TYPE_CUSTOM) return "CUSTOM";
  return "OTHER";
}

std::string DeviceInfo::id() const { return std::to_string(platform_index) + ":" + std::to_string(device_index); }

namespace {
std::atomic<bool> loader_started{false};  // list_devices has called OpenCL (src/oclgrind.hpp says why it matters)

std::vector<DeviceInfo> list_devices_unchecked() {
  // PoCL 3.1 initialises its devices on the first clGetDeviceIDs; a second thread asking meanwhile
  // is told there are none (two controllers made at once in two threads: "platforms exist but
  // report no device"). Asking one thread at a time costs nothing after the first.
  static std::mutex first_use;
  std::lock_guard lock(first_use);
  loader_started = true;
  std::vector<cl::Platform> platforms;
  cl_uint count = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &count);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && count == 0)) throw DeviceError(no_platform_help);
  if (err != CL_SUCCESS) throw OpenCLError(err, "clGetPlatformIDs");
  cl::Platform::get(&platforms);
  // Oclgrind, once a selection naming it registered it, says it has every device type, and the ICD
  // loader's default order puts platforms with GPUs first: numbered last instead, it leaves every
  // other device's P:D what `hetflow devices` showed without it.
  std::stable_partition(platforms.begin(), platforms.end(),
                        [](const cl::Platform& p) { return trimmed(p.getInfo<CL_PLATFORM_NAME>()) != "Oclgrind"; });

  std::vector<DeviceInfo> out;
  std::string deviceless;  // the platforms that answered with no device, for the error if none has one
  for (unsigned p = 0; p < platforms.size(); ++p) {
    std::vector<cl::Device> devices;
    try {
      platforms[p].getDevices(CL_DEVICE_TYPE_ALL, &devices);
    } catch (const cl::Error& e) {
      if (e.err() != CL_DEVICE_NOT_FOUND) throw OpenCLError(e.err(), "clGetDeviceIDs");
    }
    if (devices.empty()) {  // a platform with no device is not an error
      deviceless += (deviceless.empty() ? "" : ", ") + trimmed(platforms[p].getInfo<CL_PLATFORM_NAME>());
      continue;
    }
    for (unsigned d = 0; d < devices.size(); ++d) {
      const cl::Device& dev = devices[d];
      DeviceInfo info;
      info.platform_index = p;
      info.device_index = d;
      info.platform = platforms[p];
      info.device = dev;
      info.platform_name = trimmed(platforms[p].getInfo<CL_PLATFORM_NAME>());
      info.platform_version = trimmed(platforms[p].getInfo<CL_PLATFORM_VERSION>());
      info.name = trimmed(dev.getInfo<CL_DEVICE_NAME>());
      info.vendor = trimmed(dev.getInfo<CL_DEVICE_VENDOR>());
      info.version = trimmed(dev.getInfo<CL_DEVICE_VERSION>());
      info.driver_version = trimmed(dev.getInfo<CL_DRIVER_VERSION>());
      info.type = dev.getInfo<CL_DEVICE_TYPE>();
      info.compute_units = dev.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
      info.global_mem_bytes = dev.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
      info.local_mem_bytes = dev.getInfo<CL_DEVICE_LOCAL_MEM_SIZE>();
      info.max_work_group_size = dev.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
      info.max_alloc_bytes = dev.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
      const auto items = dev.getInfo<CL_DEVICE_MAX_WORK_ITEM_SIZES>();
      for (std::size_t i = 0; i < 3 && i < items.size(); ++i) info.max_work_item_sizes[i] = items[i];
      // Deprecated in 2.0 but still answered by NVIDIA and PoCL; CPU devices share host memory.
      cl_bool unified = CL_FALSE;
      if (clGetDeviceInfo(dev(), CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, nullptr) != CL_SUCCESS)
        unified = (info.type & CL_DEVICE_TYPE_CPU) ? CL_TRUE : CL_FALSE;
      info.host_unified_memory = unified == CL_TRUE;
      info.non_uniform_work_groups = has_non_uniform_work_groups(dev(), info.version);
      out.push_back(std::move(info));
    }
  }
  // The platform is there but its driver could not start a device: for PoCL, most often a cache
  // directory it cannot write (it then reports no device, and "no driver" sent a user reinstalling).
  if (out.empty())
    throw DeviceError("OpenCL platforms were found (" + deviceless +
                      ") but none reports a device: its driver could not start one. For PoCL, check that its "
                      "cache directory is writable (POCL_CACHE_DIR, else $XDG_CACHE_HOME or $HOME/.cache) and run "
                      "with POCL_DEBUG=all to see why; `clinfo` shows what the driver reports.");
  return out;
}
}  // namespace

DeviceChoice select_device_from(const std::vector<DeviceInfo>& devices, std::string_view spec_in,
                                std::string_view source) {
  const std::string spec = lower(trimmed(std::string(spec_in)));
  auto no_match = [&](const std::string& why) {
    return DeviceError("device selection '" + std::string(spec_in) + "' (from " + std::string(source) + ") " + why +
                       ". Devices available:" + describe_all(devices));
  };
  // Oclgrind reports every device type: a program that registers it to check one controller must
  // not find its other controllers' defaults and `gpu`/`cpu` moved onto the simulator.
  const auto simulator = [](const DeviceInfo& d) { return d.platform_name == "Oclgrind"; };
  if (spec.empty()) {
    for (const auto& d : devices)
      if ((d.type & CL_DEVICE_TYPE_GPU) && !simulator(d))
        return {d, "default: the first GPU of any platform (set HETFLOW_DEVICE to choose another)"};
    const auto first = std::find_if(devices.begin(), devices.end(), [&](const DeviceInfo& d) { return !simulator(d); });
    return {first != devices.end() ? *first : devices.front(),
            "default: no GPU found, so the first device (set HETFLOW_DEVICE to choose another)"};
  }
  const std::pair<const char*, cl_device_type> types[] = {
      {"gpu", CL_DEVICE_TYPE_GPU}, {"cpu", CL_DEVICE_TYPE_CPU}, {"accelerator", CL_DEVICE_TYPE_ACCELERATOR}};
  for (const auto& [word, type] : types) {
    if (spec != word) continue;
    for (const auto& d : devices)
      if ((d.type & type) && !simulator(d))
        return {d, "first " + std::string(word) + " device, as " + std::string(source) + " asks"};
    throw no_match("matches no device of that type (Oclgrind, a simulator, is chosen only by name or number)");
  }
  if (auto colon = spec.find(':');
      colon != std::string::npos && colon > 0 &&
      std::all_of(spec.begin(), spec.end(), [](char c) { return std::isdigit((unsigned char)c) || c == ':'; })) {
    if (spec.find(':', colon + 1) != std::string::npos) throw no_match("is not a platform:device pair of numbers");
    unsigned long p = 0, d = 0;
    try {
      p = std::stoul(spec.substr(0, colon));
      d = std::stoul(spec.substr(colon + 1));
    } catch (const std::exception&) {  // "0:" or a number past unsigned long
      throw no_match("is not a platform:device pair of numbers");
    }
    for (const auto& dev : devices)
      if (dev.platform_index == p && dev.device_index == d)
        return {dev, "platform " + std::to_string(p) + ", device " + std::to_string(d) + ", as " + std::string(source) +
                         " asks"};
    throw no_match("names no existing platform:device pair");
  }
  for (const auto& d : devices)
    if (lower(d.name).find(spec) != std::string::npos || lower(d.platform_name).find(spec) != std::string::npos)
      return {d, "first device whose name or platform contains '" + std::string(spec_in) + "', as " +
                     std::string(source) + " asks"};
  throw no_match("matches no device or platform name");
}

std::vector<DeviceInfo> list_devices() {
  return detail::cl_call("listing the OpenCL devices", [] { return list_devices_unchecked(); });
}

DeviceChoice select_device(std::string_view spec, std::string_view origin) {
  const std::string selection = !spec.empty() ? std::string(spec) : detail::env_text("HETFLOW_DEVICE").value_or("");
  std::string oclgrind_problem = detail::register_oclgrind_if_named(selection, loader_started.load());
  struct RemoveRegistration {
    ~RemoveRegistration() { detail::remove_oclgrind_registration(); }  // the loader has read it, or failed
  };
  auto devices = [] {
    const RemoveRegistration remove;
    return list_devices();
  }();
  if (!oclgrind_problem.empty() &&
      std::none_of(devices.begin(), devices.end(), [](const DeviceInfo& d) { return d.platform_name == "Oclgrind"; }))
    throw DeviceError("device selection '" + selection + "' asks for Oclgrind, but " + oclgrind_problem);
  if (!spec.empty()) return select_device_from(devices, spec, origin);
  if (const auto env = detail::env_text("HETFLOW_DEVICE")) return select_device_from(devices, *env, "HETFLOW_DEVICE");
  return select_device_from(devices, {}, "default");
}

}  // namespace hetflow
