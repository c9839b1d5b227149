#pragma once
#include <cstdint>

namespace hetflow::workloads {
// A 32-bit integer hash (lowbias32): the deterministic "random" source of the frames and inputs.
inline std::uint32_t mix32(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352dU;
  h ^= h >> 15;
  h *= 0x846ca68bU;
  h ^= h >> 16;
  return h;
}
}  // namespace hetflow::workloads
