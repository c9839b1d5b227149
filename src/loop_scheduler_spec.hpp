#pragma once
// The scheduler a LoopOptions::scheduler text names (include/hetflow/parallel_for.hpp).
#include <memory>
#include <string>

#include "loop_schedulers.hpp"

namespace hetflow::detail {

// "logfit", "static:S", "dynamic:C", "hguided", "oracle"; UsageError naming the text and the forms.
std::unique_ptr<LoopScheduler> make_loop_scheduler(const std::string& spec, unsigned cpu_workers);

}  // namespace hetflow::detail
