#include "loop_scheduler_spec.hpp"

#include <hetflow/errors.hpp>

#include <charconv>
#include <cstdint>
#include <system_error>

namespace hetflow::detail {

namespace {
[[noreturn]] void refuse(const std::string& spec, const std::string& why) {
  throw UsageError("loop scheduler '" + spec + "': " + why +
                   "; the forms are logfit, static:S (the devices' share, 0..1, split among them by their throughput "
                   "in the previous call) or "
                   "static:S1,S2,... (one share per device, their sum at most 1), dynamic:C (chunks of C "
                   "iterations, C from 1 to " +
                   std::to_string(SIZE_MAX) + "), hguided, oracle");
}

// Plain decimal only, read by from_chars rather than strtod/strtoll: those also take leading blanks
// (but not trailing ones), a sign, hex ("0x0.8"), exponents, "inf" and "nan", follow the C locale's
// decimal point, and strtoll turns an overflow into LLONG_MAX without a word.
bool digits_only(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// "S": digits with at most one point, at least one digit ("0.25", "1", ".5", "1.").
bool plain_decimal(const std::string& text) {
  const auto point = text.find('.');
  const std::string digits = point == std::string::npos ? text : text.substr(0, point) + text.substr(point + 1);
  return digits_only(digits);
}

// "S" or "S1,...,Sd": one share per device; a single share is the devices' together.
std::vector<double> static_shares(const std::string& spec, const std::string& arg, unsigned devices) {
  std::vector<double> shares;
  for (std::size_t from = 0;;) {
    const std::size_t comma = arg.find(',', from);
    const std::string one = arg.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    double share = -1;
    if (plain_decimal(one)) std::from_chars(one.data(), one.data() + one.size(), share, std::chars_format::fixed);
    if (!(share >= 0.0 && share <= 1.0))
      refuse(spec, "share '" + one + "' must be a number from 0 to 1 in plain decimal (digits and a point, as 0.25)");
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

std::size_t dynamic_chunk(const std::string& spec, const std::string& arg) {
  if (!digits_only(arg))
    refuse(spec, "the chunk '" + arg + "' must be a positive whole number in plain decimal digits");
  std::size_t chunk = 0;
  const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), chunk);
  if (ec == std::errc::result_out_of_range || end != arg.data() + arg.size())
    refuse(spec, "the chunk " + arg + " is out of range: it must be from 1 to " + std::to_string(SIZE_MAX));
  if (chunk == 0) refuse(spec, "the chunk must be a positive whole number, not 0");
  return chunk;
}
}  // namespace

std::unique_ptr<LoopScheduler> make_loop_scheduler(const std::string& spec, unsigned cpu_workers, unsigned devices) {
  if (devices == 0) devices = 1;
  if (spec.find_first_of(" \t\n\v\f\r") != std::string::npos)
    refuse(spec, "it has a blank in it (none is allowed, before or after the colon or at either end)");
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
    return std::make_unique<DynamicScheduler>(cpu_workers, devices, dynamic_chunk(spec, arg));
  }
  refuse(spec, "unknown scheduler");
}

}  // namespace hetflow::detail
