#pragma once
// What every benchmark under perf/ times with: a wall-clock duration around a callable, and the
// median of repeated runs (the tables report medians; machines are noisy).
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace bench {

inline double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace bench
