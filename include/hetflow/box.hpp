#pragma once
#include <array>
#include <cstddef>
#include <string>

namespace hetflow {

// The size of a tile: x is the fastest-varying index (row-major: element (x, y, z) sits at
// x + width * (y + height * z)). Unused dimensions are 1.
struct Extent {
  std::size_t x = 1, y = 1, z = 1;
  int dims = 1;
  Extent() = default;
  Extent(std::size_t x_) : x(x_), dims(1) {}
  Extent(std::size_t x_, std::size_t y_) : x(x_), y(y_), dims(2) {}
  Extent(std::size_t x_, std::size_t y_, std::size_t z_) : x(x_), y(y_), z(z_), dims(3) {}
  std::size_t count() const { return x * y * z; }
  friend bool operator==(const Extent& a, const Extent& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
};

// A box of elements: `offset` is the first element, `size` how many along each dimension.
// Hazards are computed between overlapping boxes only.
struct Box {
  std::array<std::size_t, 3> offset{0, 0, 0};
  std::array<std::size_t, 3> size{0, 0, 0};

  static Box whole(const Extent& e) { return Box{{0, 0, 0}, {e.x, e.y, e.z}}; }
  bool empty() const { return size[0] == 0 || size[1] == 0 || size[2] == 0; }
  std::size_t count() const { return size[0] * size[1] * size[2]; }
  bool overlaps(const Box& o) const {
    for (int d = 0; d < 3; ++d)
      if (offset[d] >= o.offset[d] + o.size[d] || o.offset[d] >= offset[d] + size[d]) return false;
    return !empty() && !o.empty();
  }
  bool contains(const Box& o) const {
    for (int d = 0; d < 3; ++d)
      if (o.offset[d] < offset[d] || o.offset[d] + o.size[d] > offset[d] + size[d]) return false;
    return true;
  }
  bool within(const Extent& e) const {
    const std::size_t lim[3] = {e.x, e.y, e.z};
    for (int d = 0; d < 3; ++d)
      if (offset[d] > lim[d] || size[d] > lim[d] - offset[d]) return false;
    return true;
  }
  // "[x0:x1, y0:y1, z0:z1)" limited to `dims` dimensions.
  std::string str(int dims = 3) const {
    std::string s = "[";
    for (int d = 0; d < dims; ++d) {
      if (d) s += ", ";
      s += std::to_string(offset[d]) + ":" + std::to_string(offset[d] + size[d]);
    }
    return s + ")";
  }
  friend bool operator==(const Box& a, const Box& b) { return a.offset == b.offset && a.size == b.size; }
};

}  // namespace hetflow
