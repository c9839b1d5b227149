#pragma once
// Comma-separated arguments of the benchmarks (scheduler lists, slot counts): "a,b,,c" gives
// {"a", "b", "c"}; empty items are dropped.
#include <sstream>
#include <string>
#include <vector>

namespace bench {

inline std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string s; std::getline(ss, s, ',');)
    if (!s.empty()) out.push_back(s);
  return out;
}

}  // namespace bench
