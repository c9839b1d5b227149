#pragma once
// PoCL before 7.0 aborts, or releases a kernel binary still in use, when two commands of one
// kernel that PoCL compiled in different variants (global offset zero or not, grid width) run at
// once on its CPU device: its process-wide cache of loaded kernel binaries finds the entry to
// release by kernel and local size only (docs/drivers.md, "One kernel, several launches at once";
// fixed upstream in PoCL 7.0). The engine avoids it in two parts:
//   - within a controller, each launch of a kernel waits for the previous launch of that kernel
//     (graph_nodes/opencl_streaming.cpp); launches of different kernels still overlap;
//   - across controllers alive at once, each one's programs are built with a build option of its
//     own (-D HETFLOW_KERNEL_CACHE_SLOT=n), which gives its kernels cache entries of their own. Slot
//     0 adds nothing, so a program built by one controller at a time keeps PoCL's on-disk cache.
#include <hetflow/device.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace hetflow::detail {

// "OpenCL 3.0 PoCL 3.1+debian  Linux, ..." → {3, 1}; nothing for a platform that is not PoCL.
struct Version {
  int major = 0, minor = 0;
};
std::optional<Version> pocl_version(std::string_view platform_version);

// PoCL < 7.0 on a CPU device, unless HETFLOW_DEBUG_UNGUARDED_KERNEL_CACHE is set (fault injection:
// the tests check that the banded program aborts without the guard).
bool launches_of_one_kernel_must_not_overlap(const DeviceInfo& device);

// The smallest slot number no other live holder has, for as long as this object lives.
class KernelCacheSlot {
 public:
  explicit KernelCacheSlot(bool wanted);
  ~KernelCacheSlot();
  KernelCacheSlot(const KernelCacheSlot&) = delete;
  KernelCacheSlot& operator=(const KernelCacheSlot&) = delete;
  bool taken() const { return slot_.has_value(); }
  std::string build_option() const;  // empty for slot 0 (or none)

 private:
  std::optional<unsigned> slot_;
};

}  // namespace hetflow::detail
