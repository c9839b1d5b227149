#include "loop_scheduler_spec.hpp"

#include <hetflow/errors.hpp>

#include <cstdlib>

namespace hetflow::detail {

namespace {
[[noreturn]] void refuse(const std::string& spec, const std::string& why) {
  throw UsageError("loop scheduler '" + spec + "': " + why +
                   "; the forms are logfit, static:S (the device's share, 0..1), dynamic:C (chunks of C "
                   "iterations, C > 0), hguided, oracle");
}
}  // namespace

std::unique_ptr<LoopScheduler> make_loop_scheduler(const std::string& spec, unsigned cpu_workers) {
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  auto no_argument = [&] {
    if (colon != std::string::npos) refuse(spec, "'" + name + "' takes no parameter");
  };
  if (name == "logfit") {
    no_argument();
    return std::make_unique<LogFitScheduler>(cpu_workers, 1);
  }
  if (name == "hguided") {
    no_argument();
    return std::make_unique<HGuidedScheduler>(cpu_workers, 1);
  }
  if (name == "oracle") {
    no_argument();
    return std::make_unique<OracleScheduler>(cpu_workers, 1);
  }
  if (name == "static" || name == "dynamic") {
    if (arg.empty()) refuse(spec, "'" + name + "' needs its parameter after a colon");
    char* end = nullptr;
    if (name == "static") {
      const double share = std::strtod(arg.c_str(), &end);
      if (*end != '\0' || !(share >= 0.0 && share <= 1.0)) refuse(spec, "the share must be a number from 0 to 1");
      return std::make_unique<StaticScheduler>(cpu_workers, std::vector<double>{share});
    }
    const long long chunk = std::strtoll(arg.c_str(), &end, 10);
    if (*end != '\0' || chunk <= 0) refuse(spec, "the chunk must be a positive whole number");
    return std::make_unique<DynamicScheduler>(cpu_workers, 1, std::size_t(chunk));
  }
  refuse(spec, "unknown scheduler");
}

}  // namespace hetflow::detail
