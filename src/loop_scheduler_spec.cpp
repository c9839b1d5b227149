#include "loop_scheduler_spec.hpp"

#include <hetflow/errors.hpp>

#include <cstdlib>

namespace hetflow::detail {

namespace {
[[noreturn]] void refuse(const std::string& spec, const std::string& why) {
  throw UsageError("loop scheduler '" + spec + "': " + why +
                   "; the forms are logfit, static:S (the devices' share, 0..1, split among them by their throughput "
                   "in the previous call) or "
                   "static:S1,S2,... (one share per device, their sum at most 1), dynamic:C (chunks of C "
                   "iterations, C > 0), hguided, oracle");
}

// "S" or "S1,...,Sd": one share per device; a single share is the devices' together.
std::vector<double> static_shares(const std::string& spec, const std::string& arg, unsigned devices) {
  std::vector<double> shares;
  for (std::size_t from = 0;;) {
    const std::size_t comma = arg.find(',', from);
    const std::string one = arg.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    char* end = nullptr;
    const double share = std::strtod(one.c_str(), &end);
    if (one.empty() || *end != '\0' || !(share >= 0.0 && share <= 1.0))
      refuse(spec, "share '" + one + "' must be a number from 0 to 1");
    shares.push_back(share);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (shares.size() != 1 && shares.size() != devices)
    refuse(spec, std::to_string(shares.size()) + " shares for a loop over " + std::to_string(devices) +
                     " device(s): give one share, or one per device");
  double sum = 0;
  for (double s : shares) sum += s;
  if (sum > 1.0 + 1e-9) refuse(spec, "the shares add up to " + std::to_string(sum) + ", more than 1");
  return shares;
}
}  // namespace

std::unique_ptr<LoopScheduler> make_loop_scheduler(const std::string& spec, unsigned cpu_workers, unsigned devices) {
  if (devices == 0) devices = 1;
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  auto no_argument = [&] {
    if (colon != std::string::npos) refuse(spec, "'" + name + "' takes no parameter");
  };
  if (name == "logfit") {
    no_argument();
    return std::make_unique<LogFitScheduler>(cpu_workers, devices);
  }
  if (name == "hguided") {
    no_argument();
    return std::make_unique<HGuidedScheduler>(cpu_workers, devices);
  }
  if (name == "oracle") {
    no_argument();
    return std::make_unique<OracleScheduler>(cpu_workers, devices);
  }
  if (name == "static" || name == "dynamic") {
    if (arg.empty()) refuse(spec, "'" + name + "' needs its parameter after a colon");
    if (name == "static") {
      std::vector<double> shares = static_shares(spec, arg, devices);
      if (shares.size() == 1 && devices > 1) return std::make_unique<StaticScheduler>(cpu_workers, devices, shares[0]);
      return std::make_unique<StaticScheduler>(cpu_workers, std::move(shares));
    }
    char* end = nullptr;
    const long long chunk = std::strtoll(arg.c_str(), &end, 10);
    if (*end != '\0' || chunk <= 0) refuse(spec, "the chunk must be a positive whole number");
    return std::make_unique<DynamicScheduler>(cpu_workers, devices, std::size_t(chunk));
  }
  refuse(spec, "unknown scheduler");
}

}  // namespace hetflow::detail
