#pragma once
// The program's own flow-graph nodes and loops as a controller saw them (FlowNodeRecord,
// FlowEdgeRecord in include/hetflow/record.hpp): oneTBB 2021 cannot list a graph's nodes or edges,
// so each hetflow node registers itself and reports every message it receives with the node the
// message left last. Thread-safe: nodes run on any TBB worker.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <hetflow/record.hpp>

namespace hetflow::detail {

class FlowTopology {
 public:
  // Kept only for a recording controller, the only kind that dumps: otherwise each node made would
  // stay listed until the controller's end, a program building a graph per job growing by ~1 KB a
  // graph (found by a user's program). Node ids are handed out either way.
  explicit FlowTopology(bool keep) : keep_(keep) {}
  std::uint32_t add_node(std::string name, std::string kind);  // its id, from 1
  // A message (a loop call) arrived at `to`, having left the nodes `from` last (several after a
  // join and flow::merge; none: it came from no hetflow node).
  void arrived(const std::vector<std::uint32_t>& from, std::uint32_t to);
  void describe(std::uint32_t node, std::string state);  // FlowNodeRecord::state
  void failed(std::uint32_t node);                       // FlowNodeRecord::failed_messages
  std::vector<FlowNodeRecord> nodes() const;
  std::vector<FlowEdgeRecord> edges() const;

 private:
  const bool keep_;
  mutable std::mutex m_;
  std::uint32_t made_ = 0;
  std::vector<FlowNodeRecord> nodes_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> edges_;
};

}  // namespace hetflow::detail
