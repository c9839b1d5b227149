#include "workloads/sobel_sizing.hpp"

#include <hetflow/errors.hpp>

#include <algorithm>
#include <string>
#include <thread>

namespace hetflow::workloads {

int default_host_threads(cl_device_type type, unsigned compute_units) {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (!(type & CL_DEVICE_TYPE_CPU)) return cores;
  return std::max(1, cores - static_cast<int>(compute_units));
}

int default_host_threads(const cl::Device& device) {
  return default_host_threads(device.getInfo<CL_DEVICE_TYPE>(), device.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>());
}

std::shared_ptr<tbb::task_arena> host_arena(const cl::Device& device, int threads) {
  if (threads < 0) throw UsageError("host threads must be positive or 0 (the default), got " + std::to_string(threads));
  return std::make_shared<tbb::task_arena>(threads > 0 ? threads : default_host_threads(device));
}

}  // namespace hetflow::workloads
