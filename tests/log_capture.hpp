#pragma once
// What the library logs while a LogCapture lives, at `level` and above; its stderr sink stays as it was.
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

#include "log.hpp"

namespace test {

class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level = spdlog::level::debug)
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)), before_(hetflow::log().level()) {
    auto& logger = hetflow::log();
    for (auto& s : logger.sinks()) s->set_level(before_);  // stderr stays as it was
    logger.sinks().push_back(sink_);
    logger.set_level(level);
  }
  ~LogCapture() {
    auto& logger = hetflow::log();
    logger.set_level(before_);
    auto& sinks = logger.sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    for (auto& s : sinks) s->set_level(spdlog::level::trace);  // the logger's level decides again
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() {
    hetflow::log().flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  spdlog::level::level_enum before_;
};

}  // namespace test
