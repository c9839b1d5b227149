#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <hetflow/box.hpp>

namespace hetflow {

// Why one request waited for another (docs/architecture.md, "Hazards"): the hazard, the tile and image, the
// overlapping region and the slots of both ends (offloading_write, kernel_read, host_write, ...).
struct EdgeRecord {
  std::uint64_t from = 0;
  std::uint64_t to = 0;
  std::string hazard;  // RAW, WAR, WAW
  std::string tile;
  std::string image;  // host, device
  Box region;
  int dims = 1;
  std::string from_slot, to_slot;
};

// One request as the dumps show it. Times are nanoseconds on the host's steady clock since the
// controller started; device times come from OpenCL profiling mapped onto that clock.
struct RequestRecord {
  std::uint64_t id = 0;
  std::string kind;    // H2D, D2H, kernel, host, wait
  std::string name;    // kernel name, host task name, "move_to(a)" ...
  std::string lane;    // "H2D", "D2H", "kernel0", "host", "wait"
  std::string status;  // done, failed, cancelled, pending
  std::string error;
  std::int64_t submit_ns = -1, start_ns = -1, end_ns = -1;
  // Device commands: when the driver's enqueue call returned (host clock). Between submit and
  // enqueue it waited for its predecessors on the host side or for the engine (and the call
  // itself); between enqueue and start, in the driver's queue. A runtime may start a command
  // inside the call (PoCL has), so start_ns can come first.
  std::int64_t enqueue_ns = -1;
  std::vector<EdgeRecord> in_edges;
  // The node of the program's own flow graph that made it (FlowNodeRecord::id), 0 for a request the
  // program made on the Controller itself.
  std::uint32_t flow_node = 0;
};

// A node of the program's own tbb::flow::graph that makes requests (include/hetflow/flow.hpp) or a
// heterogeneous loop (include/hetflow/parallel_for.hpp): what a dump shows of the user's topology,
// which oneTBB cannot list.
struct FlowNodeRecord {
  std::uint32_t id = 0;        // 1, 2, ... in the order the nodes were made
  std::string name;            // NodeOptions::name, or the kernel's name, "host", "to_host", the loop's name
  std::string kind;            // kernel_node, host_node, to_host_node, parallel_for
  std::uint64_t messages = 0;  // messages (loops: calls) it received
  // Messages it marked failed: its body, roles or launch function threw, its launch was refused, or
  // a request it made for the message failed or was cancelled. Their host requests may still be
  // `done` (a host node's body runs in a hook that catches what it throws), so this is where a
  // dump shows them.
  std::uint64_t failed_messages = 0;
  // A loop (parallel_for, loop_node): what its scheduler decided and had learned at the end of its
  // last call (the line HETFLOW_LOG=debug prints then: phases, chunk sizes, throughputs, the fit).
  // Empty for other nodes.
  std::string state;
};

// Messages that left one of these nodes and reached another, through whatever plain TBB nodes lie
// between (a join, a limiter, a pool): the user's edges as the messages went, each with its count.
// `from` = 0: messages that had passed no hetflow node before (made by an input_node, say).
struct FlowEdgeRecord {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  std::uint64_t messages = 0;
};

}  // namespace hetflow
