#pragma once
// The SIZE argument of the workload benchmarks: a named frame size (720p, 1080p, 4k, 8k, 16k),
// WxH, or N (N x N).
#include <map>
#include <string>
#include <utility>

namespace bench {

inline std::pair<int, int> parse_size(const std::string& s) {
  static const std::map<std::string, std::pair<int, int>> named = {{"720p", {1280, 720}},
                                                                   {"1080p", {1920, 1080}},
                                                                   {"4k", {4096, 2160}},
                                                                   {"8k", {7680, 4320}},
                                                                   {"16k", {15360, 8640}}};
  if (auto it = named.find(s); it != named.end()) return it->second;
  const auto x = s.find('x');
  if (x == std::string::npos) return {std::stoi(s), std::stoi(s)};
  return {std::stoi(s.substr(0, x)), std::stoi(s.substr(x + 1))};
}

}  // namespace bench
