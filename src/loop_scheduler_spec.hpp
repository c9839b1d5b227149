#pragma once
// The scheduler a LoopOptions::scheduler text names (include/hetflow/parallel_for.hpp).
#include <memory>
#include <string>

#include "loop_schedulers.hpp"

namespace hetflow::detail {

// "logfit", "static:S" or "static:S1,...,Sd", "dynamic:C", "hguided", "oracle", for a loop over
// `devices` devices; UsageError naming the text and the forms. Strict: S is plain decimal (digits
// and a point: no sign, exponent or hex) from 0 to 1, C plain decimal digits from 1 to SIZE_MAX
// (larger is refused, not clamped), and a blank anywhere in the text is refused, not trimmed.
std::unique_ptr<LoopScheduler> make_loop_scheduler(const std::string& spec, unsigned cpu_workers, unsigned devices = 1);

}  // namespace hetflow::detail
