// Text options, read strictly. CLI11 takes `--size ""` as given and empty, and most options then
// read an empty value as "not given": the user's typo would run the default without a word.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include <hetflow/errors.hpp>

namespace hetflow::cli {

// For add_option(...)->check(non_empty()).
inline CLI::Validator non_empty() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "an empty value" : ""; }, "TEXT");
}

// "a,b,c" as its elements; throws UsageError naming `option` for an empty element ("a,,b", "a,").
inline std::vector<std::string> split_list(const std::string& option, const std::string& text) {
  std::vector<std::string> items;
  std::string::size_type start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (items.back().empty())
      throw UsageError(option + " '" + text + "': an empty element (a comma at the start, the end, or twice)");
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

}  // namespace hetflow::cli
