#include "region_text.hpp"

#include <hetflow/tile.hpp>

#include <cstdint>

namespace hetflow::detail {

std::string region_text(const Box& b, const Extent& e) {
  int dims = e.dims;
  for (int d = e.dims; d < 3; ++d)
    if (b.offset[d] != 0 || b.size[d] != 1) dims = d + 1;
  std::string s = "[";
  for (int d = 0; d < dims; ++d) {
    if (d) s += ", ";
    const bool fits = b.size[d] <= SIZE_MAX - b.offset[d];
    s += std::to_string(b.offset[d]) +
         (fits ? ":" + std::to_string(b.offset[d] + b.size[d]) : ":+" + std::to_string(b.size[d]));
  }
  return s + ")";
}

std::string out_of_bounds(const Access& a) {
  const auto& t = *a.tile;
  if (a.box.within(t.extent)) return {};
  return "region " + region_text(a.box, t.extent) + " is out of the bounds of tile '" + t.name + "' (" +
         region_text(Box::whole(t.extent), t.extent) + ")";
}

}  // namespace hetflow::detail
