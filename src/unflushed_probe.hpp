#pragma once
// Whether a device runs a command that nobody flushed. OpenCL only promises that a flushed
// command reaches the device; NVIDIA's driver and PoCL 3.1 and 5.0 run one anyway
// (tools/drivers/flush_probe.c, perf/RESULTS.md 2026-11-26 02:40Z). Where it does, the streaming
// node's flush each time it runs dry buys nothing and costs 1.3-3 us per pipelined request on
// NVIDIA; where it does not (or the probe cannot tell), that flush stays, so the device starts on
// commands nobody waits for yet (src/flush_policy.hpp).
#include <chrono>
#include <string>

#include "hetflow/opencl.hpp"

namespace hetflow::detail {

struct UnflushedProbe {
  bool runs_unflushed = false;
  std::string why;  // for the log and the dump: what the probe saw
};

// Enqueues a 4-byte write on `queue` without flushing it and watches its status for up to
// `patience`. Leaves the queue empty; a driver error only makes the answer "no".
UnflushedProbe probe_unflushed(const cl::Context& context, const cl::CommandQueue& queue,
                               std::chrono::microseconds patience);

}  // namespace hetflow::detail
