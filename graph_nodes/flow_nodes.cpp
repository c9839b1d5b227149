// The part of the flow-graph nodes (include/hetflow/flow.hpp) that does not depend on the message type:
// which transfers a node's roles need, its submissions, its completion hooks and its failures.
#include <hetflow/flow.hpp>

#include "engine.hpp"

namespace hetflow::flow::detail {

namespace {
enum Where : std::uint8_t { host = 1, device = 2, both = 3 };

// Deciding a tile's transfer and submitting it must be one step: two nodes that both saw the tile on
// the host would otherwise both move it, or one would launch before the other's move was submitted.
// Nothing blocks while it is held (Engine::DeferredBlocking): under sync a blocked transfer runs
// other graph tasks meanwhile, other nodes' bodies among them, which wait for this lock — on 2 cores
// the flow-graph Sobel then hung under AddressSanitizer with every thread waiting.
// Nor after: a node's transfers are not waited for in its body under sync either (what needs them,
// the node's completion hook, is ordered after them by their hazards). Waiting there blocked a TBB
// thread inside the user's graph: with oneTBB limited to one thread, or two graphs on one controller
// each waited for from its own thread, the pipeline hung.
std::mutex& residency_mutex() {
  static std::mutex m;
  return m;
}

bool whole(const Access& a) { return a.box == Box::whole(a.tile->extent); }

Access whole_tile(const Access& a, Role r) { return Access{a.tile, Box::whole(a.tile->extent), r}; }
}  // namespace

NodeCore::NodeCore(Controller& c, std::string name, const char* kind, NodeOptions options)
    : c_(c),
      life_(hetflow::detail::engine_of(c).life()),
      serial_(hetflow::detail::engine_of(c).serial),
      name_(std::move(name)),
      options_(std::move(options)),
      id_(hetflow::detail::engine_of(c).flow_topology().add_node(name_, kind)) {}

void NodeCore::arrived(Message& m) {
  if (hetflow::detail::ControllerLife::Use use(*life_); use) {
    // Ids are per controller: another controller's node is outside this one's graph, as a plain TBB
    // node is (id 0), or its id would name one of this controller's nodes, or none.
    std::vector<std::uint32_t> from;
    for (const auto& n : m.last_nodes) {
      const std::uint32_t id = n.controller == serial_ ? n.node : 0;
      if (std::find(from.begin(), from.end(), id) == from.end()) from.push_back(id);
    }
    hetflow::detail::engine_of(c_).flow_topology().arrived(from, id_);
  }
  m.last_nodes.assign(1, Message::NodeRef{serial_, id_});
}

bool NodeCore::owns(const hetflow::detail::TileState& t) const {
  // Tile ids are per controller too: another's failure lists must not be searched by them.
  return t.owner == serial_;
}

void NodeCore::controller_gone() const {
  // NodeCore::fail puts the node's name before it, as before any error of the node's.
  throw UsageError("its controller was destroyed while the graph still held this message");
}

void NodeCore::note_tile(Message& m, const Access& a) {
  for (const auto& t : m.touched_tiles)
    if (t == a.tile) return;
  m.touched_tiles.push_back(a.tile);
}

std::vector<Access> NodeCore::launch(const Kernel& k, Launch l, Message& m) {
  std::vector<Access> tiles, written;
  for (const auto& arg : l.args)
    if (const auto* a = std::get_if<Access>(&arg)) tiles.push_back(*a);
  hetflow::detail::ControllerLife::Use use(*life_);
  if (!use) controller_gone();
  hetflow::detail::Engine::FlowNodeScope made_by(id_);
  hetflow::detail::Engine::DeferredBlocking never_blocks(hetflow::detail::engine_of(c_));
  {
    std::lock_guard lock(residency_mutex());
    for (const auto& a : tiles) {
      note_tile(m, a);
      // A partial write keeps the rest of the tile, so the device image must hold it first.
      const bool needs_device_image = a.reads() || !whole(a);
      if (options_.implicit_transfers && needs_device_image && !a.tile->device_only && a.tile->latest.load() == host) {
        a.tile->latest.store(both);
        c_.submit_transfer(true, whole_tile(a, Role::in));
      }
    }
    c_.submit_launch(k, l.range, std::move(l.args));
    for (const auto& a : tiles) {
      if (!a.writes()) continue;
      a.tile->latest.store(device);
      const bool listed =
          std::any_of(written.begin(), written.end(), [&](const Access& w) { return w.tile == a.tile; });
      if (!listed) written.push_back(device_image(whole_tile(a, Role::in)));
    }
  }
  return written;
}

void NodeCore::prepare_host(const std::vector<Access>& roles, Message& m) {
  hetflow::detail::ControllerLife::Use use(*life_);
  if (!use) controller_gone();
  hetflow::detail::Engine::FlowNodeScope made_by(id_);
  hetflow::detail::Engine::DeferredBlocking never_blocks(hetflow::detail::engine_of(c_));
  {
    std::lock_guard lock(residency_mutex());
    for (const auto& a : roles) {
      note_tile(m, a);
      const bool needs_host_image = a.reads() || !whole(a);
      if (options_.implicit_transfers && needs_host_image && !a.tile->device_only && a.tile->latest.load() == device) {
        a.tile->latest.store(both);
        c_.submit_transfer(false, whole_tile(a, Role::in));
      }
    }
    for (const auto& a : roles)
      if (a.writes()) a.tile->latest.store(host);
  }
}

void NodeCore::hook(std::function<void(const Outcome&)> fn, std::vector<Access> roles, const char* suffix) {
  try {
    hetflow::detail::ControllerLife::Use use(*life_);
    if (!use) controller_gone();
    hetflow::detail::Engine::FlowNodeScope made_by(id_);
    c_.submit_hook(name_ + suffix, fn, std::move(roles));
  } catch (const std::exception& e) {  // e.g. DeviceLost: the message must still come out
    fn(Outcome{"node '" + name_ + "': its completion hook was refused: " + e.what()});
  }
}

void NodeCore::hook_limited(std::function<void(const Outcome&)> fn, std::vector<Access> roles) {
  std::lock_guard lock(order_m_);
  order_queue_.emplace_back(std::move(fn), std::move(roles));
  if (order_running_ >= options_.concurrency) return;
  ++order_running_;
  submit_next_limited();
}

void NodeCore::submit_next_limited() {
  // A hook is submitted only once a running one has ended: a hook cannot be held back once submitted
  // without blocking its thread, and a limit kept in the async_node would bound only the submitting
  // step. The transfers were submitted on arrival, so waiting here costs no overlap; with a limit of 1
  // the bodies run in arrival order.
  auto [fn, roles] = std::move(order_queue_.front());
  order_queue_.pop_front();
  auto self = shared_from_this();
  hook(
      [self, fn = std::move(fn)](const Outcome& o) {
        fn(o);
        std::lock_guard lock(self->order_m_);
        if (self->order_queue_.empty())
          --self->order_running_;
        else
          self->submit_next_limited();
      },
      std::move(roles));
}

void NodeCore::take_failures(Message& m, const Outcome& o) {
  if (hetflow::detail::ControllerLife::Use use(*life_); use) hetflow::detail::engine_of(c_).flow_topology().failed(id_);
  collect_failures(m);
  if (!m.error.empty()) return;
  for (const auto& f : m.failures)
    if (!f.cancelled) {
      // Named by the node first, as a body's own error is: the request alone does not say which node.
      m.error = "node '" + name_ + "': " + f.kind + " '" + f.name + "' (request #" + std::to_string(f.id) +
                ") failed: " + f.cause;
      return;
    }
  const std::string named = "node '" + name_ + "': ";
  m.error = o.error.rfind(named, 0) == 0 ? o.error : named + o.error;  // a refused hook's is named already
}

void NodeCore::collect_failures(Message& m) {
  m.failures_collected = true;
  hetflow::detail::ControllerLife::Use use(*life_);
  if (!use) return;
  auto& engine = hetflow::detail::engine_of(c_);
  for (const auto& t : m.touched_tiles)
    if (owns(*t))
      for (auto& f : engine.take_failures(t.get())) m.failures.push_back(std::move(f.report));
}

std::vector<Access> NodeCore::earlier_requests(const Message& m) const {
  std::vector<Access> roles;
  for (const auto& t : m.touched_tiles) {
    if (!owns(*t)) continue;
    // in() waits for an image's latest writer, and each image has its own: a request the nodes make
    // writes a tile of the message (a transfer, a launch, a hook), so these are the ends of them all.
    const Access whole{t, Box::whole(t->extent), Role::in};
    if (!t->device_only) roles.push_back(whole);
    roles.push_back(device_image(whole));
  }
  return roles;
}

void NodeCore::fail(Message& m, std::exception_ptr e) {
  m.exception = e;
  m.failures_collected = false;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    m.error = "node '" + name_ + "': " + x.what();
  } catch (...) {
    m.error = "node '" + name_ + "': threw an exception that is not a std::exception";
  }
  if (hetflow::detail::ControllerLife::Use use(*life_); use) hetflow::detail::engine_of(c_).flow_topology().failed(id_);
}

}  // namespace hetflow::flow::detail
