#pragma once
// The engine's reading of the environment (include/hetflow/settings.hpp lists the variables).
// Each accessor returns nothing for an unset or empty variable and throws UsageError, naming the
// variable and the accepted values, for a malformed one.
#include <hetflow/controller.hpp>
#include <hetflow/settings.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hetflow::detail {

std::optional<Policy> env_policy();                     // HETFLOW_POLICY
std::optional<unsigned> env_kernel_queues();            // HETFLOW_KERNEL_QUEUES, 1..64
std::optional<QueueOrder> env_queue_order();            // HETFLOW_QUEUE_ORDER
std::optional<std::string> env_text(const char* name);  // HETFLOW_DEVICE, HETFLOW_DUMP, HETFLOW_TRACE
std::vector<std::string> env_kernel_path();             // HETFLOW_KERNEL_PATH, ':'-separated
// HETFLOW_LOG as spdlog's level number: trace 0 … off 6.
std::optional<int> env_log_level();
// The HETFLOW_DEBUG_* switches: "1" on, "0" off.
bool env_switch(const char* name);
// HETFLOW_DEBUG_POLL_US "FIRST,LONGEST": the completion poller's intervals in µs, 1 ≤ FIRST ≤ LONGEST ≤ 100000.
std::optional<std::pair<unsigned, unsigned>> env_poll_intervals();

// 1..64, as ControllerOptions::kernel_queues and HETFLOW_KERNEL_QUEUES accept.
unsigned checked_kernel_queues(long n, const std::string& source);

}  // namespace hetflow::detail
