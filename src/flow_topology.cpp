#include "flow_topology.hpp"

namespace hetflow::detail {

std::uint32_t FlowTopology::add_node(std::string name, std::string kind) {
  std::lock_guard lock(m_);
  if (!keep_) return ++made_;
  FlowNodeRecord n;
  n.id = std::uint32_t(nodes_.size() + 1);
  n.name = std::move(name);
  n.kind = std::move(kind);
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

void FlowTopology::arrived(const std::vector<std::uint32_t>& from, std::uint32_t to) {
  std::lock_guard lock(m_);
  if (to == 0 || to > nodes_.size()) return;
  ++nodes_[to - 1].messages;
  if (from.empty()) ++edges_[{0, to}];
  for (auto f : from) ++edges_[{f, to}];
}

void FlowTopology::describe(std::uint32_t node, std::string state) {
  std::lock_guard lock(m_);
  if (node == 0 || node > nodes_.size()) return;
  nodes_[node - 1].state = std::move(state);
}

void FlowTopology::failed(std::uint32_t node) {
  std::lock_guard lock(m_);
  if (node == 0 || node > nodes_.size()) return;
  ++nodes_[node - 1].failed_messages;
}

std::vector<FlowNodeRecord> FlowTopology::nodes() const {
  std::lock_guard lock(m_);
  return nodes_;
}

std::vector<FlowEdgeRecord> FlowTopology::edges() const {
  std::lock_guard lock(m_);
  std::vector<FlowEdgeRecord> out;
  out.reserve(edges_.size());
  for (const auto& [ends, count] : edges_) out.push_back(FlowEdgeRecord{ends.first, ends.second, count});
  return out;
}

}  // namespace hetflow::detail
