#include "workloads/loop_common.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

namespace hetflow::workloads {

void check_chunk(const char* workload, std::size_t begin, std::size_t end, std::size_t n) {
  if (begin >= end || end > n)
    throw UsageError(std::string(workload) + ": chunk [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") is empty or outside the loop's [0, " + std::to_string(n) + ")");
}

namespace {
std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
}  // namespace

std::string LoopCheck::str() const {
  std::string s = std::to_string(count) + " compared, " + std::to_string(differing) + " not bit-identical, " +
                  std::to_string(out_of_tol) + " beyond tolerance, max rel error " + scientific(max_rel_error);
  if (out_of_tol) s += ", first bad element " + std::to_string(first_bad);
  return s;
}

LoopCheck compare_floats(const float* got, const float* ref, std::size_t count, double rel_tol, double floor) {
  LoopCheck r;
  r.count = count;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(ref[i])) continue;
    ++r.differing;
    const double err = std::abs(double(got[i]) - double(ref[i])) / std::max(std::abs(double(ref[i])), floor);
    const bool bad = !(err <= rel_tol);  // NaN compares false
    if (bad && r.out_of_tol++ == 0) r.first_bad = i;
    if (!std::isnan(r.max_rel_error) && (std::isnan(err) || err > r.max_rel_error)) r.max_rel_error = err;
  }
  return r;
}

double rms(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * double(x);
  return v.empty() ? 0.0 : std::sqrt(s / double(v.size()));
}

LoopCheck compare_ints(const std::int32_t* got, const std::int32_t* ref, std::size_t count) {
  LoopCheck r;
  r.count = count;
  for (std::size_t i = 0; i < count; ++i)
    if (got[i] != ref[i]) {
      if (r.differing++ == 0) r.first_bad = i;
      const double err = std::abs(double(got[i]) - double(ref[i])) / std::max(std::abs(double(ref[i])), 1.0);
      r.max_rel_error = std::max(r.max_rel_error, err);
    }
  r.out_of_tol = r.differing;
  return r;
}

}  // namespace hetflow::workloads
