// Whole-number options, read strictly. CLI11's own conversion (2.1) reads with strtoull/strtoll in
// base 0: "-5" into an unsigned option wraps to 2^64 - 5, "010" is octal 8, "0x10" is 16, leading
// blanks pass, and a 64-bit overflow becomes the largest value without a word. Its Range check
// then prints bounds as doubles ("0.000000 to 1.797e+308"), and for an option with several names
// it names the first, whichever was typed.
#pragma once
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

namespace hetflow::cli {

// `text` as a number if it is plain decimal digits (no sign, blank, prefix or point) within
// [min, max]; nullopt otherwise.
inline std::optional<std::uint64_t> parse_whole_number(const std::string& text, std::uint64_t min, std::uint64_t max) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) return std::nullopt;
  return value;
}

inline std::string whole_number_range(std::uint64_t min, std::uint64_t max) {
  return "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
}

// Why `text` is not a whole number in [min, max] ("" when it is); CLI11 puts the option's name in
// front of it.
inline std::string whole_number_error(const std::string& text, std::uint64_t min, std::uint64_t max) {
  if (parse_whole_number(text, min, max)) return {};
  const std::string range = whole_number_range(min, max);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) return "'" + text + "' is out of range: it must be " + range;
  if (text.size() > 1 && text[0] == '-' && text.find_first_not_of("0123456789", 1) == std::string::npos)
    return "'" + text + "' is negative: it must be " + range;
  return "'" + text + "' is not a plain decimal whole number: it must be " + range;
}

// For add_option(...)->transform(whole_number(min, max)): refuses what whole_number_error refuses,
// and hands CLI11's base-0 conversion the value without leading zeros, so "010" stays ten.
inline CLI::Validator whole_number(std::uint64_t min, std::uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        std::string why = whole_number_error(text, min, max);
        if (why.empty()) text = std::to_string(*parse_whole_number(text, min, max));
        return why;
      },
      "[" + std::to_string(min) + " - " + std::to_string(max) + "]");
}

}  // namespace hetflow::cli
