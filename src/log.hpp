#pragma once
#include <spdlog/logger.h>

namespace hetflow {
// The library's logger ("hetflow", stderr). Level from HETFLOW_LOG=debug|info|warn|error|off
// (default warn), read once.
spdlog::logger& log();
}  // namespace hetflow
