#pragma once
// JSON text for the files hetflow writes (dumps, traces).
#include <string>

#include <nlohmann/json.hpp>

namespace hetflow::detail {

// Names come from the program and need not be UTF-8 (a tile named "bad\xff"): such bytes become
// U+FFFD rather than an nlohmann exception that is not a hetflow::Error and leaves no file.
template <class Json>
std::string json_text(const Json& v) {
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace hetflow::detail
