#include "type_size_probe.hpp"

#include "driver_lock.hpp"
#include "log.hpp"

namespace hetflow::detail {

std::size_t TypeSizeProbe::size_of(const Kernel& kernel, std::size_t arg, const std::string& type,
                                   ProgramCache& programs, const cl::Context& context, const cl::Device& device) {
  std::lock_guard lock(m_);
  const auto key = std::make_pair(kernel.handle()(), arg);
  if (auto it = sizes_.find(key); it != sizes_.end()) return it->second;
  std::size_t size = 0;
  try {
    if (!kernel.source()) throw UsageError("the kernel's source is not known");
    const std::string probe = *kernel.source() +
                              "\n__kernel void hetflow_sizeof_probe(__global uint* size) { size[0] = (uint)sizeof(" +
                              type + "); }\n";
    const auto program =
        programs.from_source(probe, kernel.build_options(), kernel.program_label() + " (sizeof(" + type + "))");
    cl::Kernel k = program->kernel("hetflow_sizeof_probe").handle();
    cl_uint value = 0;
    cl::Buffer out(context, CL_MEM_WRITE_ONLY, sizeof value);
    cl::CommandQueue queue(context, device);
    k.setArg(0, out);
    auto driver = driver_lock();  // Oclgrind runs the commands in this thread
    queue.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(1));
    queue.enqueueReadBuffer(out, CL_TRUE, 0, sizeof value, &value);
    size = value;
  } catch (const std::exception& e) {
    log().warn(
        "kernel '{}' argument {}: the size of '{}' could not be asked of the device ({}); launches are not "
        "checked against it",
        kernel.name(), arg, type, e.what());
  }
  sizes_.emplace(key, size);
  return size;
}

}  // namespace hetflow::detail
