#include "log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace hetflow {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("hetflow");
    if (!l) l = spdlog::stderr_color_mt("hetflow");
    const char* env = std::getenv("HETFLOW_LOG");
    l->set_level(env && *env ? spdlog::level::from_str(env) : spdlog::level::warn);
    l->set_pattern("[hetflow %l] %v");
    return l;
  }();
  return *logger;
}

}  // namespace hetflow
