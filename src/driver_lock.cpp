#include "driver_lock.hpp"

#include <atomic>

namespace hetflow::detail {
namespace {
std::atomic<bool> serializing{false};
std::recursive_mutex driver_mutex;
}  // namespace

void serialize_driver_calls() { serializing.store(true); }

std::unique_lock<std::recursive_mutex> driver_lock() {
  if (!serializing.load(std::memory_order_relaxed)) return {};
  return std::unique_lock<std::recursive_mutex>(driver_mutex);
}

}  // namespace hetflow::detail
