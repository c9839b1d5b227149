#pragma once
#include <array>
#include <cstddef>

namespace hetflow {

// The NDRange of a launch: Range(w, h).local(16, 16).offset(x0, y0). Without local(), the driver
// picks the work-group size (a launch of a kernel that declares reqd_work_group_size must give that
// one: another, or none, is a UsageError at the launch).
// local() and offset() take no more dimensions than the range has: a launch of Range(128).local(16, 2)
// is a UsageError naming both, since OpenCL would drop the 2 (sizes of 1 and offsets of 0 beyond the
// range's dimensions are what they would be anyway, and pass).
class Range {
 public:
  Range(std::size_t x) : global_{x, 1, 1}, dims_(1) {}
  Range(std::size_t x, std::size_t y) : global_{x, y, 1}, dims_(2) {}
  Range(std::size_t x, std::size_t y, std::size_t z) : global_{x, y, z}, dims_(3) {}

  Range& local(std::size_t x, std::size_t y = 1, std::size_t z = 1) {
    local_ = {x, y, z};
    has_local_ = true;
    return *this;
  }
  Range& offset(std::size_t x, std::size_t y = 0, std::size_t z = 0) {
    offset_ = {x, y, z};
    has_offset_ = true;
    return *this;
  }

  unsigned dims() const { return dims_; }
  const std::array<std::size_t, 3>& global() const { return global_; }
  const std::array<std::size_t, 3>& local() const { return local_; }
  const std::array<std::size_t, 3>& offset() const { return offset_; }
  bool has_local() const { return has_local_; }
  bool has_offset() const { return has_offset_; }

 private:
  std::array<std::size_t, 3> global_;
  std::array<std::size_t, 3> local_{1, 1, 1};
  std::array<std::size_t, 3> offset_{0, 0, 0};
  unsigned dims_;
  bool has_local_ = false, has_offset_ = false;
};

}  // namespace hetflow
