#pragma once
// The timeline of what a controller ran (docs/architecture.md, "Dumps and traces") as Chrome trace-event JSON — it
// opens in Perfetto and chrome://tracing. The summary `hetflow report` prints from such a trace is the
// tools' (tools/analysis/trace_summary.hpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <hetflow/dump.hpp>
#include <hetflow/record.hpp>

namespace hetflow {

// One process; one track per lane (H2D, D2H, queue, kernel0.., host0.., wait) named by
// thread_name metadata; one "X" event per request with known times (ts/dur in µs from
// start_ns/end_ns; waits span submit → end, the time their caller blocked); a flow arrow ("s"/"f",
// category "hazard") per edge between two timed requests. The dump (to_json) is embedded under the
// top-level key "hetflow" so that report can follow the edges exactly.
std::string to_trace_json(const std::vector<RequestRecord>& records, const GraphInfo& info);

}  // namespace hetflow
