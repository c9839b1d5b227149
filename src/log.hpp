#pragma once
#include <spdlog/logger.h>

#include <utility>

namespace hetflow {
// The library's logger ("hetflow", stderr). Level from HETFLOW_LOG=debug|info|warn|error|off
// (default warn), read once.
spdlog::logger& log();

// For the lines written per request: the level is looked at here, inline, so that with debug off
// (the default) a request pays a load and a branch for each, not spdlog's call (~40 instructions
// each, four or more a request: callgrind, perf/RESULTS.md 2026-11-29).
template <class... Args>
void log_debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::logger& l = log();
  if (l.should_log(spdlog::level::debug)) l.debug(fmt, std::forward<Args>(args)...);
}
}  // namespace hetflow
