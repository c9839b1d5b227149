#include "settings.hpp"

#include <hetflow/errors.hpp>

#include <cstdlib>
#include <initializer_list>
#include <utility>
#include <sstream>
#include <string>
#include <string_view>

namespace hetflow {

const std::vector<Setting>& environment_settings() {
  static const std::vector<Setting> list = {
      {"HETFLOW_DEVICE", "gpu | cpu | accelerator | P:D | a case-insensitive part of a device or platform name",
       "the first GPU of any platform, else the first device", "which OpenCL device a controller uses"},
      {"HETFLOW_POLICY", "async | sync", "async",
       "async overlaps whatever the hazards allow; sync runs one queue and blocks every request but a launch"},
      {"HETFLOW_KERNEL_QUEUES", "1 to 64", "1", "kernel queues under async"},
      {"HETFLOW_QUEUE_ORDER", "in-order | out-of-order", "out-of-order on CPU devices, in-order on GPUs",
       "how the async queues are created"},
      {"HETFLOW_KERNEL_PATH", "directories separated by ':'", "none",
       "searched first for .cl files, before the source tree's and the installed kernels_cl/"},
      {"HETFLOW_LOG", "trace | debug | info | warn | error | critical | off", "warn",
       "what the library logs to stderr"},
      {"HETFLOW_DUMP", "a file path", "none",
       "when a controller ends, its task graph as JSON there, with .dot and .topology.dot beside it"},
      {"HETFLOW_TRACE", "a file path", "none", "when a controller ends, its timeline there as Chrome trace-event JSON"},
      {"HETFLOW_DEBUG_DROP_CALLBACKS", "0 | 1", "0",
       "fault injection for tests: ignore every OpenCL completion callback (progress from polling alone)"},
      {"HETFLOW_DEBUG_UNGUARDED_KERNEL_CACHE", "0 | 1", "0",
       "fault injection for tests: drop the guard against PoCL < 7.0's kernel-cache bug (docs/drivers.md)"},
      {"HETFLOW_DEBUG_STEPS_ON_WORKERS", "0 | 1", "0",
       "for tests and benchmarks: dispatch and enqueue every request on the flow graph's workers, never on the "
       "submitting thread"},
      {"HETFLOW_DEBUG_FAULT_KERNEL", "a kernel name", "none",
       "fault injection for tests: launches of that kernel end as if the device faulted and took the context "
       "with it (docs/drivers.md, \"Device faults\")"},
      {"HETFLOW_DEBUG_FAIL_FLUSH", "0 | 1", "0",
       "fault injection for tests: every clFlush reports CL_OUT_OF_RESOURCES (the queues still work)"},
      {"HETFLOW_DEBUG_UNCHECKED_LOCAL_SIZE", "0 | 1", "0",
       "fault injection for tests: leave a local size other than a kernel's reqd_work_group_size to the driver, "
       "which refuses the enqueue (a driver's refusal every device gives)"},
      {"HETFLOW_DEBUG_IDLE_FLUSH", "0 | 1", "0",
       "for tests and benchmarks: async queues are flushed whenever the streaming node runs dry and every 8 "
       "commands of a burst, even where the device runs unflushed commands (then both are off: "
       "src/unflushed_probe.hpp)"},
      {"HETFLOW_DEBUG_POLL_US", "FIRST,LONGEST (µs, 1 <= FIRST <= LONGEST <= 100000)", "100,1000",
       "for benchmarks: how often the completion poller checks the device commands host tasks and hooks wait "
       "for: FIRST after a new one or one that ended, doubling to LONGEST while nothing ends"},
  };
  return list;
}

namespace detail {
namespace {

const char* raw(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

[[noreturn]] void malformed(const char* name, const std::string& value) {
  std::string accepts = "?";
  for (const auto& s : environment_settings())
    if (std::string(s.name) == name) accepts = s.accepts;
  throw UsageError(std::string(name) + "='" + value + "' is not valid; it accepts " + accepts);
}

}  // namespace

unsigned checked_kernel_queues(long n, const std::string& source) {
  if (n < 1 || n > 64) throw UsageError(source + " must be between 1 and 64, not " + std::to_string(n));
  return unsigned(n);
}

// A variable that takes one of a few words: the value of the word it holds.
template <class T>
std::optional<T> env_word(const char* name, std::initializer_list<std::pair<const char*, T>> words) {
  const char* v = raw(name);
  if (!v) return std::nullopt;
  for (const auto& [word, value] : words)
    if (std::string(v) == word) return value;
  malformed(name, v);
}

std::optional<Policy> env_policy() {
  return env_word<Policy>("HETFLOW_POLICY", {{"async", Policy::async}, {"sync", Policy::sync}});
}

// Plain decimal digits only, as every other knob is read exactly (HETFLOW_POLICY=" async" is refused
// too): strtol alone also took leading blanks and a sign. At most `most`, else nullopt.
std::optional<unsigned long> decimal(std::string_view text, unsigned long most) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  const unsigned long n = std::stoul(std::string(text));
  return n <= most ? std::optional<unsigned long>(n) : std::nullopt;
}

std::optional<unsigned> env_kernel_queues() {
  const char* v = raw("HETFLOW_KERNEL_QUEUES");
  if (!v) return std::nullopt;
  const auto n = decimal(v, 64);
  if (!n || *n < 1) malformed("HETFLOW_KERNEL_QUEUES", v);
  return unsigned(*n);
}

std::optional<QueueOrder> env_queue_order() {
  return env_word<QueueOrder>("HETFLOW_QUEUE_ORDER",
                              {{"in-order", QueueOrder::in_order}, {"out-of-order", QueueOrder::out_of_order}});
}

std::optional<std::string> env_text(const char* name) {
  const char* v = raw(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

std::vector<std::string> env_kernel_path() {
  std::vector<std::string> dirs;
  if (const char* v = raw("HETFLOW_KERNEL_PATH")) {
    std::stringstream ss(v);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty()) dirs.push_back(dir);
  }
  return dirs;
}

std::optional<int> env_log_level() {
  return env_word<int>(
      "HETFLOW_LOG", {{"trace", 0}, {"debug", 1}, {"info", 2}, {"warn", 3}, {"error", 4}, {"critical", 5}, {"off", 6}});
}

bool env_switch(const char* name) { return env_word<bool>(name, {{"1", true}, {"0", false}}).value_or(false); }

std::optional<std::pair<unsigned, unsigned>> env_poll_intervals() {
  const char* v = raw("HETFLOW_DEBUG_POLL_US");
  if (!v) return std::nullopt;
  const std::string_view text(v);
  const auto comma = text.find(',');
  if (comma == std::string_view::npos) malformed("HETFLOW_DEBUG_POLL_US", v);
  const auto first = decimal(text.substr(0, comma), 100000), longest = decimal(text.substr(comma + 1), 100000);
  if (!first || !longest || *first < 1 || *first > *longest) malformed("HETFLOW_DEBUG_POLL_US", v);
  return std::pair{unsigned(*first), unsigned(*longest)};
}

}  // namespace detail

void check_environment() {
  detail::env_policy();
  detail::env_kernel_queues();
  detail::env_queue_order();
  detail::env_log_level();
  detail::env_switch("HETFLOW_DEBUG_DROP_CALLBACKS");
  detail::env_switch("HETFLOW_DEBUG_UNGUARDED_KERNEL_CACHE");
  detail::env_switch("HETFLOW_DEBUG_STEPS_ON_WORKERS");
  detail::env_switch("HETFLOW_DEBUG_FAIL_FLUSH");
  detail::env_switch("HETFLOW_DEBUG_IDLE_FLUSH");
  detail::env_switch("HETFLOW_DEBUG_UNCHECKED_LOCAL_SIZE");
  detail::env_poll_intervals();
}

}  // namespace hetflow
