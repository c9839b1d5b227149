#pragma once
// Nodes for the user's own tbb::flow::graph (docs/flow-nodes.md): a kernel launch, a host function, a
// loop balanced between the CPU and the device, and the hand-off to plain TBB nodes, each a node that composes with
// input_node, limiter_node, join_node, sequencer_node, buffer_node and make_edge. A message is any copyable struct
// derived from hetflow::flow::Message holding the tiles its work uses; each node says, from the message, what it does
// to which tiles, and the controller orders the requests by their hazards as for every request.
//
//   struct Frame : hetflow::flow::Message { hetflow::Tile<float> in, out; };
//   hetflow::flow::kernel_node<Frame> blur(g, ctl, ctl.kernel("blur.cl", "blur"), [&](const Frame& f) {
//     return hetflow::flow::launch(range, in(f.in), out(f.out), w, h); });
//   hetflow::flow::host_node<Frame> save(g, ctl, [](const Frame& f) { return hetflow::flow::touch(in(f.out)); },
//                                        [&](Frame& f) { write(f.out.host()); }, {.name = "save", .concurrency = 1});
//   tbb::flow::make_edge(blur, save);
//
// Transfers follow from the roles: a kernel node moves to the device the tiles it reads whose latest
// contents are on the host, a host node brings back those whose latest contents are on the device
// (TileState::latest; whole tiles; requests made directly on the Controller and plain TBB nodes do
// not update it: say what they wrote with written_on_host(t) / written_on_device(t)). No thread blocks or spins while
// the device works: nodes are async_nodes that emit from completion hooks (Controller::on_ready), and
// each message holds the graph's wait_for_all() until the requests made for it have ended.
#include <tbb/flow_graph.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include <hetflow/controller.hpp>
#include <hetflow/parallel_for.hpp>

namespace hetflow::detail {
class LoopState;
class ControllerLife;
}  // namespace hetflow::detail

namespace hetflow::flow {

// What every message carries besides its tiles. A message that failed passes through the nodes after
// it without work, so limiters and slot pools get it back; the first failure's cause stays here.
struct Message {
  std::uint64_t seq = 0;  // set by the producer; sequencer_node and key_matching joins use it
  std::string error;      // why it failed; empty while it did not
  // The failed and cancelled requests made for this message, taken from the controller when a node saw
  // the failure, so its tiles are usable by the next message at once (a wait no longer reports them).
  // Requests only: a node's own throw (a host_node body, a roles function, a launch refused at its
  // submission) is no request, so it is in `error` and `exception`, and `failures` may be empty.
  std::vector<FailedRequest> failures;
  std::exception_ptr exception;  // what a node's body or roles function threw, as thrown
  bool failed() const { return !error.empty(); }
  // For messages reused from a pool: forget the last trip's failure (the tiles stay).
  void clear_failure() {
    error.clear();
    failures.clear();
    exception = nullptr;
    failures_collected = false;
  }

  // The tiles nodes made requests on for this message: where a node looks for its failures.
  std::vector<std::shared_ptr<hetflow::detail::TileState>> touched_tiles;
  // Set by the nodes once a failed message holds the failures of every request made for it so far.
  // A message failed by a throw may still have requests running (a kernel node emits on submission):
  // the next node waits for them and takes their failures before passing it on, or they would stay
  // with the controller and cancel the next message's requests reading the same tiles.
  bool failures_collected = false;
  // A hetflow node: its controller (Controller's serial number) and its id in that controller's dump.
  struct NodeRef {
    std::uint64_t controller = 0;
    std::uint32_t node = 0;
    bool operator==(const NodeRef&) const = default;
  };
  // The hetflow nodes it left last (one; several after flow::merge): how a dump learns the program's
  // edges (GraphInfo::flow_edges), which oneTBB cannot list. With its controller: one graph may use
  // several, and a dump counts a message from another controller's node as from outside (id 0).
  std::vector<NodeRef> last_nodes;
};

// After a join of branches that each carried a copy of one message: `first`, with what the other
// copies add — their failures (the first error met stays the message's error), the tiles their nodes
// touched and the nodes they left. Use it where the joined tuple becomes one message again, so that a
// failure on any branch stays with the message.
template <class Msg, class... More>
Msg merge(Msg first, const More&... more) {
  auto add = [&first](const Message& other) {
    // Each copy's own requests: collected only where every copy's were (an ok copy's never are).
    if (!other.failures_collected) first.failures_collected = false;
    if (!first.failed() && other.failed()) {
      first.error = other.error;
      first.exception = other.exception;
    }
    first.failures.insert(first.failures.end(), other.failures.begin(), other.failures.end());
    for (const auto& t : other.touched_tiles)
      if (std::find(first.touched_tiles.begin(), first.touched_tiles.end(), t) == first.touched_tiles.end())
        first.touched_tiles.push_back(t);
    for (auto n : other.last_nodes)
      if (std::find(first.last_nodes.begin(), first.last_nodes.end(), n) == first.last_nodes.end())
        first.last_nodes.push_back(n);
  };
  (add(more), ...);
  return first;
}

// A kernel node's work for one message: the range and the arguments in the kernel's order, as
// Controller::launch takes them.
struct Launch {
  Range range;
  std::vector<hetflow::detail::KernelArg> args;
};
template <class... A>
Launch launch(const Range& range, A&&... args) {
  return Launch{range, {hetflow::detail::to_kernel_arg(std::forward<A>(args))...}};
}

// The tiles a host node's body uses, with their roles (in/out/io).
struct Touch {
  std::vector<Access> roles;
};
template <class... A>
Touch touch(A&&... roles) {
  return Touch{{Access(std::forward<A>(roles))...}};
}

// A loop node's work for one message: iterations [0, n) of `body` (include/hetflow/parallel_for.hpp).
struct Loop {
  std::size_t n = 0;
  LoopBody body{};
};

// when_submitted: a kernel node passes the message on once its launch is submitted (the next kernel
// node's launch is ordered after it on the device: no round trip to the host between them). The
// message is then not yet known to have succeeded: the next hetflow node that waits for the kernel's
// writes learns of a failure and fails the message. A plain TBB node after it cannot: a graph that
// ends in such a kernel node (or hands its messages to plain nodes straight from one) reports a failed
// message as ok, and its failed requests stay with the controller, where they cancel the next requests
// reading those tiles, the next message's (which then fails with them) in a pool, until a wait reports them.
// End such a graph in a to_host_node or a kernel node with when_complete.
// when_complete: once the kernel has ended (to time it, or to feed a node that is not hetflow's).
enum class Emit { when_submitted, when_complete };

struct NodeOptions {
  std::string name{};  // names the node's requests in dumps and traces; default: the kernel's name, "host"
  Emit emit = Emit::when_submitted;  // kernel_node only
  // host_node, to_host_node: how many bodies may run at once (0, tbb::flow::unlimited: no limit); 1 also
  // runs them in the order the messages arrived. Bodies run in completion hooks, so the limit is kept
  // there: a message whose body may not start yet waits with its hook unsubmitted (its transfers are
  // submitted on arrival all the same).
  std::size_t concurrency = tbb::flow::unlimited;
  bool implicit_transfers = true;  // false: the node moves nothing; the program does
};

namespace detail {

// The message-independent part of every node: transfers from residency, submissions, completion hooks
// and failures (graph_nodes/flow_nodes.cpp).
class NodeCore : public std::enable_shared_from_this<NodeCore> {
 public:
  // `kind` names the node type in dumps (kernel_node, host_node, to_host_node).
  NodeCore(Controller& c, std::string name, const char* kind, NodeOptions options);
  const std::string& name() const { return name_; }
  const NodeOptions& options() const { return options_; }
  // A message reached this node: counted on the edge from the node it left last, which is now this one.
  void arrived(Message& m);
  std::uint32_t id() const { return id_; }

  // The kernel's launch, after the transfers its reads need; the tiles it writes become device-latest.
  // Returns the written tiles' device images, for the completion hook.
  std::vector<Access> launch(const Kernel& k, Launch l, Message& m);
  // Brings back what the roles read that is device-latest; written tiles become host-latest.
  void prepare_host(const std::vector<Access>& roles, Message& m);
  // `suffix` tells a kernel node's completion hook from its kernel in dumps ("sobel_rows: ended").
  void hook(std::function<void(const Outcome&)> fn, std::vector<Access> roles, const char* suffix = "");
  // At most options().concurrency of these hooks submitted and not yet run, the others waiting in the
  // order they came (host_node with a concurrency: its bodies).
  void hook_limited(std::function<void(const Outcome&)> fn, std::vector<Access> roles);
  // The outcome failed: the message takes the failures of its tiles' requests from the controller.
  void take_failures(Message& m, const Outcome& o);
  // A function of the node's threw, or its launch was refused: the message fails, naming the node.
  void fail(Message& m, std::exception_ptr e);
  // What a hook must wait for so that every request made so far on m's tiles (of this controller)
  // has ended: their latest writers, on both images.
  std::vector<Access> earlier_requests(const Message& m) const;
  // Takes the failures of m's tiles' requests from the controller, without counting a failure here.
  void collect_failures(Message& m);
  // Throws UsageError naming the node when its controller is gone (after the destructor began).
  [[noreturn]] void controller_gone() const;
  hetflow::detail::ControllerLife& life() const { return *life_; }

 private:
  void submit_next_limited();  // with order_m_ held
  bool owns(const hetflow::detail::TileState& t) const;
  static void note_tile(Message& m, const Access& a);

  Controller& c_;
  // Closed by the controller's destructor: a node step checks it before touching c_ (a program may
  // destroy the controller while its graph still holds messages for this node).
  std::shared_ptr<hetflow::detail::ControllerLife> life_;
  // The controller's serial number, read while it lived: what its tiles and its nodes' refs carry.
  std::uint64_t serial_;
  std::string name_;
  NodeOptions options_;
  std::uint32_t id_;              // in the controller's record of the program's flow graph
  std::recursive_mutex order_m_;  // recursive: a refused hook runs its function at once, which submits the next
  std::deque<std::pair<std::function<void(const Outcome&)>, std::vector<Access>>> order_queue_;
  std::size_t order_running_ = 0;  // hook_limited's hooks submitted and not yet run
};

// A failed message goes on. Requests made for it before it failed may still be running (a kernel node
// emits on submission, a launch function may throw after that): a hook first waits for them and takes
// their failures into the message, or they would stay with the controller and fail the next message
// on the same tiles.
template <class Msg, class Gateway>
void pass_failed(const std::shared_ptr<NodeCore>& core, Msg m, Gateway& gw) {
  std::vector<Access> pending;
  if (!m.failures_collected) pending = core->earlier_requests(m);
  if (pending.empty()) {
    m.failures_collected = true;
    gw.try_put(m);
    return;
  }
  gw.reserve_wait();
  auto* gate = &gw;
  core->hook(
      [core, gate, m](const Outcome&) mutable {
        core->collect_failures(m);
        gate->try_put(m);
        gate->release_wait();
      },
      std::move(pending), ": failed message");
}

// How a loop node's call ended: what the loop did, its first failure ("" if none), the tiles its
// chunks used (where the failed requests are).
struct LoopEnd {
  LoopReport report;
  std::string failure;
  std::vector<std::shared_ptr<hetflow::detail::TileState>> tiles;
  std::vector<FailedRequest> failures;  // under sync, already taken from the controller
};

// The message-independent part of a loop_node (graph_nodes/loop_node.cpp): one loop whose scheduler
// serves every message, and the loops waiting their turn (one call at a time, in arrival order).
class LoopCore : public std::enable_shared_from_this<LoopCore> {
 public:
  LoopCore(Controller& c, std::string name, LoopOptions loop, NodeOptions options);
  ~LoopCore();
  NodeCore& node() { return *node_; }
  // Checks l's body and brings back the tiles it reads whose latest contents are on the device (its
  // CPU chunks read the host images, and the loop moves what it reads to the device itself).
  void prepare(const Loop& l, Message& m);
  // Runs l once the loops before it have ended; `done` then, on the thread that ended its last chunk
  // (under sync: here, once it ran).
  void enqueue(Loop l, std::function<void(LoopEnd)> done);
  LoopReport last_report() const;

 private:
  void start(Loop l, std::function<void(LoopEnd)> done);  // with nothing running
  Controller& c_;
  std::shared_ptr<NodeCore> node_;
  std::unique_ptr<hetflow::detail::LoopState> loop_;
  mutable std::mutex m_;
  std::deque<std::pair<Loop, std::function<void(LoopEnd)>>> waiting_;
  bool busy_ = false;
  LoopReport last_;
};

// What every node here is: a composite_node around an async_node whose body submits requests and
// whose messages go on from completion hooks (the body owns the node's NodeCore).
template <class Msg>
class async_node_base : public tbb::flow::composite_node<std::tuple<Msg>, std::tuple<Msg>> {
  using composite = tbb::flow::composite_node<std::tuple<Msg>, std::tuple<Msg>>;

 public:
  using async = tbb::flow::async_node<Msg, Msg>;
  // Puts a message in from outside the graph, as a oneTBB node's try_put.
  bool try_put(const Msg& m) { return node_.try_put(m); }

 protected:
  template <class Body>
  async_node_base(tbb::flow::graph& g, std::size_t concurrency, Body body)
      : composite(g), node_(g, concurrency, std::move(body)) {
    // The async_node's own sender interface refuses successors: its port 0 is what edges attach to.
    composite::set_external_ports(typename composite::input_ports_type(node_),
                                  typename composite::output_ports_type(tbb::flow::output_port<0>(node_)));
  }

 private:
  async node_;
};

}  // namespace detail

// Runs a kernel per message: fn(const Msg&) -> Launch.
template <class Msg>
class kernel_node : public detail::async_node_base<Msg> {
  using base = detail::async_node_base<Msg>;
  using async = typename base::async;

 public:
  template <class Fn>
  kernel_node(tbb::flow::graph& g, Controller& c, Kernel k, Fn fn, NodeOptions o = {})
      : kernel_node(g, std::make_shared<detail::NodeCore>(c, o.name.empty() ? k.name() : o.name, "kernel_node", o), k,
                    std::move(fn)) {}

 private:
  template <class Fn>
  kernel_node(tbb::flow::graph& g, std::shared_ptr<detail::NodeCore> core, Kernel k, Fn fn)
      : base(g, tbb::flow::unlimited, [core, k, fn = std::move(fn)](const Msg& in, typename async::gateway_type& gw) {
          Msg m = in;
          core->arrived(m);
          if (m.failed()) {
            detail::pass_failed(core, std::move(m), gw);
            return;
          }
          std::vector<Access> written;
          try {
            written = core->launch(k, fn(m), m);
          } catch (...) {  // refused at submission (arguments, limits): nothing was launched
            core->fail(m, std::current_exception());
            detail::pass_failed(core, std::move(m), gw);
            return;
          }
          if (written.empty()) {  // writes nothing: nothing to wait for either
            gw.try_put(m);
            return;
          }
          gw.reserve_wait();
          auto* gate = &gw;
          if (core->options().emit == Emit::when_submitted) {
            gw.try_put(m);
            core->hook([gate](const Outcome&) { gate->release_wait(); }, std::move(written), ": ended");
          } else {
            core->hook(
                [core, gate, m](const Outcome& outcome) mutable {
                  if (!outcome.ok()) core->take_failures(m, outcome);
                  gate->try_put(m);
                  gate->release_wait();
                },
                std::move(written), ": ended");
          }
        }) {}
};

// Runs body(Msg&) on a TBB worker once the host images of roles(msg) hold the message's latest data
// (moved back from the device where needed); passes the message on when the body returns. A body that
// throws, or a request of the message that failed before, marks the message failed (the body does not
// run then) and it passes on all the same.
template <class Msg>
class host_node : public detail::async_node_base<Msg> {
  using base = detail::async_node_base<Msg>;
  using async = typename base::async;

 public:
  template <class RolesFn, class Body>
  host_node(tbb::flow::graph& g, Controller& c, RolesFn roles, Body body, NodeOptions o = {})
      : host_node(g, c, std::move(roles), std::move(body), std::move(o), "host_node") {}

 protected:
  template <class RolesFn, class Body>
  host_node(tbb::flow::graph& g, Controller& c, RolesFn roles, Body body, NodeOptions o, const char* kind)
      : host_node(g, std::make_shared<detail::NodeCore>(c, o.name.empty() ? std::string("host") : o.name, kind, o),
                  std::move(roles), std::move(body)) {}

 private:
  template <class RolesFn, class Body>
  host_node(tbb::flow::graph& g, std::shared_ptr<detail::NodeCore> core, RolesFn roles, Body body)
      // Concurrency 1: the submitting step one at a time too, so hooks are queued in arrival order. The
      // limit itself is kept where the bodies run, in the hooks (NodeCore::hook_limited).
      : base(g, core->options().concurrency == 1 ? tbb::flow::serial : tbb::flow::unlimited,
             [core, roles = std::move(roles), body = std::make_shared<Body>(std::move(body))](
                 const Msg& in, typename async::gateway_type& gw) {
               Msg m = in;
               core->arrived(m);
               if (m.failed()) {
                 detail::pass_failed(core, std::move(m), gw);
                 return;
               }
               std::vector<Access> touched;
               try {
                 touched = roles(m).roles;
                 core->prepare_host(touched, m);
               } catch (...) {
                 core->fail(m, std::current_exception());
                 detail::pass_failed(core, std::move(m), gw);
                 return;
               }
               gw.reserve_wait();
               auto* gate = &gw;
               auto run = [core, gate, m, body](const Outcome& outcome) mutable {
                 if (!outcome.ok()) {
                   core->take_failures(m, outcome);
                 } else {
                   try {
                     (*body)(m);
                   } catch (...) {
                     core->fail(m, std::current_exception());
                   }
                 }
                 if (m.failed())
                   detail::pass_failed(core, std::move(m), *gate);
                 else
                   gate->try_put(m);
                 gate->release_wait();
               };
               if (core->options().concurrency != tbb::flow::unlimited)
                 core->hook_limited(std::move(run), std::move(touched));
               else
                 core->hook(std::move(run), std::move(touched));
             }) {}
};

// Code outside the nodes that rewrote a tile says so: a plain TBB node that fills a reused tile's host
// image, or requests made on the Controller directly. The nodes track where each tile's latest
// contents are only through what they do themselves; without this, the next kernel node reads the
// device's older copy (no error: the data are just stale).
template <class T>
void written_on_host(const Tile<T>& t) {
  t.shared_state()->latest.store(1);  // host
}
template <class T>
void written_on_device(const Tile<T>& t) {
  t.shared_state()->latest.store(2);  // device
}

// Passes each message on once the host images of roles(msg) hold its latest data: the hand-off to
// plain TBB nodes (function_node, sinks), which may then read those images.
template <class Msg>
class to_host_node : public host_node<Msg> {
 public:
  template <class RolesFn>
  to_host_node(tbb::flow::graph& g, Controller& c, RolesFn roles, NodeOptions o = {})
      : host_node<Msg>(
            g, c, std::move(roles), [](Msg&) {}, with_name(std::move(o)), "to_host_node") {}

 private:
  static NodeOptions with_name(NodeOptions o) {
    if (o.name.empty()) o.name = "to_host";
    return o;
  }
};

// Runs one heterogeneous loop per message (include/hetflow/parallel_for.hpp): fn(const Msg&) ->
// flow::Loop{n, body}, its iterations balanced between CPU workers and the device by one scheduler
// (LoopOptions::scheduler) that serves every message, so its measurements carry over as a
// HeteroLoop's calls do. One loop at a time: messages that arrive meanwhile wait their turn, in
// arrival order. The tiles the body reads are brought back first where their latest contents are on
// the device; the message goes on once every chunk has ended and its writes are in the host images
// (those tiles are then host-latest). A chunk that failed marks the message failed (Message::error
// names the chunk), as a throwing fn does. Under sync the loop runs inside the node's body, which
// needs a second TBB thread for its CPU chunks (with one, the message fails saying so).
// LoopBody::constants stay on the device from message to message while each message's body lists
// the same ones (tiles and boxes); a body with other constants moves its own.
// One device: the node's controller (a HeteroLoop takes several; a node would also have to keep the
// other devices' views of its messages' tiles current, which nothing here needs yet).
template <class Msg>
class loop_node : public detail::async_node_base<Msg> {
  using base = detail::async_node_base<Msg>;
  using async = typename base::async;

 public:
  template <class Fn>
  loop_node(tbb::flow::graph& g, Controller& c, Fn fn, LoopOptions loop = {}, NodeOptions o = {})
      : loop_node(
            g, std::make_shared<detail::LoopCore>(c, o.name.empty() ? std::string("loop") : o.name, std::move(loop), o),
            std::move(fn)) {}
  // What the last loop that ended did (sides, chunks, the scheduler's decisions).
  LoopReport last_report() const { return core_->last_report(); }

 private:
  template <class Fn>
  loop_node(tbb::flow::graph& g, std::shared_ptr<detail::LoopCore> core, Fn fn)
      : base(g, tbb::flow::serial,
             [core, fn = std::move(fn)](const Msg& in, typename async::gateway_type& gw) {
               Msg m = in;
               core->node().arrived(m);
               if (m.failed()) {
                 detail::pass_failed(core->node().shared_from_this(), std::move(m), gw);
                 return;
               }
               Loop l;
               try {
                 l = fn(m);
                 core->prepare(l, m);
               } catch (...) {
                 core->node().fail(m, std::current_exception());
                 detail::pass_failed(core->node().shared_from_this(), std::move(m), gw);
                 return;
               }
               gw.reserve_wait();
               auto* gate = &gw;
               core->enqueue(std::move(l), [core, gate, m](detail::LoopEnd end) mutable {
                 for (auto& t : end.tiles)
                   if (std::find(m.touched_tiles.begin(), m.touched_tiles.end(), t) == m.touched_tiles.end())
                     m.touched_tiles.push_back(t);
                 m.failures.insert(m.failures.end(), end.failures.begin(), end.failures.end());
                 if (!end.failure.empty()) {
                   const std::string error = "node '" + core->node().name() + "': parallel_for: " + end.failure;
                   core->node().take_failures(m, Outcome{error});
                   m.error = error;
                 }
                 gate->try_put(m);
                 gate->release_wait();
               });
             }),
        core_(std::move(core)) {}

  std::shared_ptr<detail::LoopCore> core_;
};

}  // namespace hetflow::flow
