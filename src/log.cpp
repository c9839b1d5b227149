#include "log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <optional>

#include "settings.hpp"

namespace hetflow {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("hetflow");
    if (!l) l = spdlog::stderr_color_mt("hetflow");
    // A malformed HETFLOW_LOG is reported by Controller's constructor (check_environment); the
    // logger itself, which may be first used anywhere, falls back to warn.
    std::optional<int> level;
    try {
      level = detail::env_log_level();
    } catch (const std::exception&) {
    }
    l->set_level(static_cast<spdlog::level::level_enum>(level.value_or(spdlog::level::warn)));
    l->set_pattern("[hetflow %l] %v");
    return l;
  }();
  return *logger;
}

}  // namespace hetflow
