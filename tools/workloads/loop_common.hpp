// What the heterogeneous loop workloads (tools/workloads/*_loop.hpp) share: the 16-byte element
// their kernels read as float4/int2, the region a chunk [begin, end) covers, the launch geometry
// and the comparison against a sequential reference.
#pragma once
#include <hetflow/controller.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hetflow::workloads {

// float4 of OpenCL C (16 bytes, 16-aligned): positions with mass, accelerations.
struct alignas(16) Vec4 {
  float x = 0, y = 0, z = 0, w = 0;
};
// int2 of OpenCL C.
struct alignas(8) Int2 {
  std::int32_t x = 0, y = 0;
};

// Work-group size of every loop kernel's launch: a chunk's range is rounded up to it, and the
// kernel returns for ids at or past the chunk's end (passed as `limit`), not just past n, since
// the rounded tail overlaps the next chunk's iterations.
inline constexpr std::size_t kLoopLocal = 64;
inline constexpr std::size_t round_up_to(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

// Elements [begin, end) of a 1-D tile.
template <class T>
TileRegion<T> span_of(const Tile<T>& t, std::size_t begin, std::size_t end) {
  return t.region(Box{{begin, 0, 0}, {end - begin, 1, 1}});
}

// Throws UsageError unless 0 <= begin < end <= n.
void check_chunk(const char* workload, std::size_t begin, std::size_t end, std::size_t n);

// How far a loop's output is from its sequential reference.
struct LoopCheck {
  std::size_t count = 0;       // elements compared
  std::size_t differing = 0;   // elements whose bit patterns differ
  std::size_t out_of_tol = 0;  // elements beyond the tolerance (NaN counts as beyond)
  double max_rel_error = 0;    // max |got - ref| / max(|ref|, floor) over the elements
  std::size_t first_bad = 0;   // the first element beyond the tolerance (when out_of_tol > 0)
  bool ok() const { return out_of_tol == 0; }
  std::string str() const;
};

// Compares element by element: exact for integers; for floats, |got - ref| <= rel_tol * max(|ref|,
// floor), where `floor` keeps near-zero references (sums that cancel) from demanding a relative
// precision the arithmetic cannot give.
LoopCheck compare_floats(const float* got, const float* ref, std::size_t count, double rel_tol, double floor);
// Root mean square: the floor of the force workloads' checks (components near 0 cancel).
double rms(const std::vector<float>& v);
LoopCheck compare_ints(const std::int32_t* got, const std::int32_t* ref, std::size_t count);

}  // namespace hetflow::workloads
