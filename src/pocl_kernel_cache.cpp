#include "pocl_kernel_cache.hpp"

#include <mutex>
#include <set>

#include "settings.hpp"

namespace hetflow::detail {

std::optional<Version> pocl_version(std::string_view text) {
  const auto at = text.find("PoCL ");
  if (at == std::string_view::npos) return std::nullopt;
  const char* p = text.data() + at + 5;
  const char* end = text.data() + text.size();
  Version v;
  auto number = [&](int& out) {
    if (p == end || *p < '0' || *p > '9') return false;
    out = 0;
    while (p != end && *p >= '0' && *p <= '9') out = out * 10 + (*p++ - '0');
    return true;
  };
  if (!number(v.major)) return std::nullopt;
  if (p != end && *p == '.') {
    ++p;
    if (!number(v.minor)) v.minor = 0;
  }
  return v;
}

bool launches_of_one_kernel_must_not_overlap(const DeviceInfo& device) {
  if (env_switch("HETFLOW_DEBUG_UNGUARDED_KERNEL_CACHE")) return false;
  const auto v = pocl_version(device.platform_version);
  return v && v->major < 7 && (device.type & CL_DEVICE_TYPE_CPU) != 0;
}

namespace {
std::mutex slots_mutex;
std::set<unsigned> slots_in_use;
}  // namespace

KernelCacheSlot::KernelCacheSlot(bool wanted) {
  if (!wanted) return;
  std::lock_guard lock(slots_mutex);
  unsigned n = 0;
  while (slots_in_use.count(n)) ++n;
  slots_in_use.insert(n);
  slot_ = n;
}

KernelCacheSlot::~KernelCacheSlot() {
  if (!slot_) return;
  std::lock_guard lock(slots_mutex);
  slots_in_use.erase(*slot_);
}

std::string KernelCacheSlot::build_option() const {
  if (!slot_ || *slot_ == 0) return {};
  return "-D HETFLOW_KERNEL_CACHE_SLOT=" + std::to_string(*slot_);
}

}  // namespace hetflow::detail
