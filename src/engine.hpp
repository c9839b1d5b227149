#pragma once
// The engine behind a Controller: OpenCL context and queues, the hazard tracker and the flow graph
//
//   user thread ──submit──▶ dispatcher (serial multifunction_node: hazards in program order)
//                              ├─▶ streaming (serial async_node: clEnqueue* with event wait lists)
//                              │      └─ clSetEventCallback ─▶ gateway ─▶ receiver (function_node)
//                              └─▶ host (function_node on TBB workers)
//   receiver / host completions release host-side consumers (host tasks, waits); a host request's
//   success puts the device requests held back behind it to the streaming node.
#include <hetflow/controller.hpp>

#include <tbb/flow_graph.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "callback_receiver.hpp"
#include "completion_poller.hpp"
#include "controller_life.hpp"
#include "dispatcher.hpp"
#include "flow_topology.hpp"
#include "opencl_streaming.hpp"
#include "request.hpp"
#include "type_size_probe.hpp"

namespace hetflow::detail {

class Engine {
 public:
  explicit Engine(const ControllerOptions& options);
  ~Engine();

  // Unique over the process's engines, whatever their addresses: what a tile records as its owner.
  const std::uint64_t serial;
  // Whether an engine of that serial, or one with that context, still exists: a tile or kernel of
  // another controller is refused saying whether its own was destroyed (thread-safe).
  static bool alive(std::uint64_t serial);
  static bool alive(cl_context context);
  DeviceChoice choice;
  Policy policy = Policy::async;
  unsigned kernel_queue_count = 1;
  bool recording = false;
  bool profiling = false;     // unset in the options: as recording
  bool out_of_order = false;  // async queues created with CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE
  // Async: whether the streaming node flushes when it runs dry, and why (src/unflushed_probe.hpp).
  std::string idle_flush = "n/a (sync: a wait flushes)";
  cl::Context context;
  std::vector<cl::CommandQueue> queues;  // async: H2D, D2H, kernel queues...; sync: one
  ProgramCache programs;
  // sizeof(type) on the device for argument `arg` of `kernel`, whose type is no OpenCL C built-in
  // (src/type_size_probe.hpp): asked of the device once per argument; 0 where it cannot be told.
  std::size_t type_size(const Kernel& kernel, std::size_t arg, const std::string& type) {
    return type_sizes_.size_of(kernel, arg, type, programs, context, choice.device.device);
  }

  // Lanes (queue indices).
  unsigned h2d_lane() const { return 0; }
  unsigned d2h_lane() const { return policy == Policy::sync ? 0 : 1; }
  unsigned next_kernel_lane();  // under submit_mutex_
  std::string lane_name(const Request& r) const;

  std::shared_ptr<TileState> make_tile(const Extent&, std::size_t elem_size, const char* elem_type, std::string name,
                                       bool device_only);
  // A tile of this engine over `home`'s host image (another engine's tile), with its own device
  // image: how a loop's further device writes straight into the home tile's host image.
  std::shared_ptr<TileState> make_alias_tile(const std::shared_ptr<TileState>& home);
  // Submitting side (any user thread). Blocks only where the policy says so.
  void submit(RequestPtr r);
  // A command a hook or host task waits for should end about `at`: the completion poller checks
  // then too (CompletionPoller::expect).
  void expect_end(std::chrono::steady_clock::time_point at) { poller_.expect(at); }
  // While set on a thread, the kernel launches it submits are also appended to `kernels`, and its
  // transfers to `transfers` (either may be null): how a loop learns which commands a device chunk's
  // body launched, to time them by profiling, and which commands end the chunk, for its calling thread
  // to watch (src/hetero_loop.cpp). `launch_writes`, where given, gets the out()/io() accesses of
  // those launches as they are submitted: a request's own accesses go with its failure
  // (Request::take_leftovers), which may come before its submitter looks.
  static void collect_commands(RequestList* kernels, RequestList* transfers,
                               std::vector<Access>* launch_writes = nullptr);
  // While set on a thread, the completion hooks it submits are also appended to `hooks`: a loop's
  // device chunks', which its CPU chunks run between their pieces once ready (run_if_ready).
  static void collect_hooks(RequestList* hooks);
  // Runs the hook or host task `r` on the calling thread if it is ready and no other thread has
  // taken it yet (its TBB task then finds it taken). Whether it ran it.
  bool run_if_ready(const RequestPtr& r) { return r->ready_to_run.load() && !r->claimed.load() && run_host_once(r); }
  // While one is open on a thread, the completion hooks it submits also wait for those of
  // `launches` that are kernel launches of the hook's engine (another's end is its own engine's to
  // tell): a loop's device chunk ends only once every launch of its body has, those that write no
  // tile the hook names included (only in() tiles, a write through an argument declared in()).
  class HooksAfter {
   public:
    explicit HooksAfter(const RequestList& launches);
    ~HooksAfter();
    HooksAfter(const HooksAfter&) = delete;
    HooksAfter& operator=(const HooksAfter&) = delete;

   private:
    const RequestList* saved_;
  };
  // Blocks until those of `launches` that are this engine's kernel launches have ended, as a
  // blocking request under sync does: their failures are left to a wait.
  void wait_for_launches(const RequestList& launches);
  // The same for `requests`, every one this engine's (a loop's own transfers); `name`: the wait's.
  void wait_for(const RequestList& requests, std::string name);
  // Blocks the calling thread in the driver until the enqueued device command `p` (its event set) has
  // ended, then completes it, releasing what waits on it: how a waiting thread learns of an end at
  // once, where NVIDIA's callbacks and the completion poller come up to a millisecond late. Returns
  // clWaitForEvents' result (CL_SUCCESS where the command was seen ended first).
  cl_int block_on_enqueued(const RequestPtr& p);
  // Whether the enqueued device command `p` has ended, asked of the driver without waiting; if it
  // has, completes it (releasing what waits on it). For a thread that watches a command between
  // sleeps (src/hetero_loop.cpp): the driver's wait keeps a core busy on NVIDIA while the device
  // works (tests/test_no_spinning.cpp: 2.0 s of CPU over 1 s).
  bool look_at(const RequestPtr& p);
  // While one is open on a thread, the requests that thread submits are recorded as made by that
  // node of the program's flow graph (or loop): a node's own transfers and hooks, and the launches a
  // loop's device body makes on the Controller. Nested scopes restore the outer one: under sync a
  // blocked submission runs other nodes' bodies on the same thread.
  class FlowNodeScope {
   public:
    explicit FlowNodeScope(std::uint32_t id);
    ~FlowNodeScope();
    FlowNodeScope(const FlowNodeScope&) = delete;
    FlowNodeScope& operator=(const FlowNodeScope&) = delete;

   private:
    std::uint32_t saved_;
  };
  // While one is open on a thread, a request that thread submits which the policy makes blocking
  // (sync) is submitted without blocking: a flow node's body, which must not hold a TBB thread of the
  // user's graph while the device works (graph_nodes/flow_nodes.cpp). A blocked submitter runs other
  // graph tasks meanwhile, and those may be the only threads that could complete what it waits for.
  class DeferredBlocking {
   public:
    explicit DeferredBlocking(Engine& e);
    ~DeferredBlocking();  // closes the scope; what it deferred is left to later waits
    DeferredBlocking(const DeferredBlocking&) = delete;
    DeferredBlocking& operator=(const DeferredBlocking&) = delete;

   private:
    RequestList deferred_;
    RequestList* saved_;
  };
  FlowTopology& flow_topology() { return flow_topology_; }
  const FlowTopology& flow_topology() const { return flow_topology_; }
  // Closed by the controller's destructor before it waits: the flow nodes' way to stop submitting.
  const std::shared_ptr<ControllerLife>& life() const { return life_; }
  void wait_tile(const std::shared_ptr<TileState>& tile);
  void wait_all();
  // wait_all until a wait ends with no request submitted meanwhile: what host tasks and hooks submit
  // while it waits runs too (a wait_all covers only what came before it). Failures are logged, not
  // thrown: the controller's destructor.
  void wait_until_quiet();
  std::vector<RequestRecord> records() const;
  std::string topology_dot() const;
  std::int64_t now_ns() const;
  // A completed command's start and end on the records' clock, if the queues profile.
  bool device_times(cl_event ev, std::int64_t& start_ns, std::int64_t& end_ns) const;
  std::size_t tracked_accesses() const;  // for tests: what the tracker holds

  // Graph-side steps, one file each under graph_nodes/ (the dispatcher's: DispatchStep).
  // Where a device command's end becomes its request's outcome (graph_nodes/callback_receiver.hpp).
  ReceiverStep& receiver_step() { return receiver_step_; }
  // device_faults.cpp: a command's status, a driver's fault report included (CL_QUEUED ...
  // CL_COMPLETE, or negative); a fault's check of the context; the lost state.
  cl_int command_status(const Request& r);
  void note_fault(const Request& r, cl_int status, const char* what);  // `what`: "ended with", "was refused:"
  // DeviceLost naming the first fault, with what a wait reports (moved from only if it throws).
  void throw_if_lost(std::vector<FailedRequest>&& failures = {}) const;
  void mark_lost(const std::string& cause);        // the first cause stays
  void run_host(const RequestPtr& r);              // host_task_node.cpp
  Outcome outcome_of_predecessors(Request& hook);  // what a completion hook is told
  void finish(Request& r, Status s, std::string error = {});
  // An exception escaped the engine's own code in a node body: fail the request rather than leave
  // it (and everything after it) pending.
  void fail_internally(const RequestPtr& r, const char* where, const std::exception& e);
  // The host task of this engine the calling thread is running, if any (host_task_node.cpp).
  const Request* host_task_on_this_thread() const;
  static bool running_any_host_task();  // a host task or hook of any engine, on this thread
  // A device command was enqueued: the waits parked on it (park) return to block on it instead.
  bool any_parked() const { return parked_.load() > 0; }
  // HETFLOW_DEBUG_UNCHECKED_LOCAL_SIZE: a local size other than a kernel's reqd_work_group_size is
  // left to the driver, which refuses the enqueue (what tests of a driver's refusal need).
  bool unchecked_local_size() const { return unchecked_local_size_; }
  // Whether the calling thread waits by parking in the graph's arena (park()): the one that made the engine.
  bool parks_here() const { return std::this_thread::get_id() == arena_owner_; }
  void wake_parked(Request& wait);
  void flush(unsigned lane);                  // clFlush, under driver_lock(); fail_lane if it fails
  void fail_lane(unsigned lane, cl_int err);  // a failed flush: the controller is lost
  // The calling thread runs the graph's tasks until it is idle, unless another thread already does
  // (one at a time: graph::wait_for_all() writes the graph's own flags on return).
  void help_run_graph();
  // The same in parts, for a thread that waits for something the graph's tasks will end (a loop's
  // call, src/hetero_loop.cpp): with the helper's lock (empty if another thread helps), it holds the
  // graph open (hold_graph), so graph::wait_for_all() keeps it there until release_graph() comes
  // from whichever thread ends the wait. Meanwhile it sleeps in TBB's own wait and wakes for each
  // new task (a device's completion put by a driver's thread), where a timed sleep between helps
  // would leave that task waiting whenever every worker runs a CPU chunk.
  std::unique_lock<std::recursive_mutex> try_to_help() { return {helper_mutex_, std::try_to_lock}; }
  void run_graph_tasks() { graph_.wait_for_all(); }  // holding try_to_help()'s lock
  void hold_graph() { graph_.reserve_wait(); }
  void release_graph() { graph_.release_wait(); }
  // Threads that may run this engine's graph tasks: its arena's, within TBB's global limit, taken
  // when the engine was made (the arena its graph runs in).
  unsigned graph_threads() const { return graph_threads_; }

  // Failures not yet thrown by a wait.
  struct Failure {
    RequestPtr request;
    FailedRequest report;
    std::vector<std::uint64_t> tiles;
  };
  std::vector<Failure> take_failures(const TileState* tile);  // null = all
  // What a wait that has returned throws for `fs`: DeviceLost with them if the controller is lost,
  // else RequestFailed if there are any.
  void report_waited(std::vector<Failure> fs) const;
  void record_failure(Request& r, Status s);  // under r.m

  using Dispatcher = tbb::flow::multifunction_node<RequestPtr, std::tuple<RequestPtr, RequestPtr>>;
  using Streaming = tbb::flow::async_node<RequestPtr, RequestPtr>;
  using HostNode = tbb::flow::function_node<RequestPtr, tbb::flow::continue_msg>;
  using Receiver = tbb::flow::function_node<RequestPtr, tbb::flow::continue_msg>;
  // The dispatcher's whole step for r: hazards, then a device request on to the streaming node,
  // through the node's port (its body) or, from a submitting thread (no ports), by running the
  // streaming step right here when that node is idle.
  void dispatch_and_hand_on(const RequestPtr& r, Dispatcher::output_ports_type* ports);

 private:
  void bind_graph_context();  // the graph's first task, spawned by the constructing thread
  void wait_request(RequestPtr w);
  bool launched_here(const Request& r) const;       // a kernel launch of this engine (its kernel's context)
  void refuse_freed_tiles(const Request& r) const;  // under submit_mutex_: throws UsageError
  // Blocking on this controller from inside one of its host tasks would wait for the graph that
  // runs the task: a UsageError saying so instead of a hang.
  void refuse_blocking_inside_host_task(const std::string& what) const;
  // The thread that made the engine waits for `wait` as a TBB thread of its arena (the graph's),
  // running whatever graph tasks come, until the wait is released or one of its device commands is
  // enqueued. Any other thread sleeps until the same, while the graph has workers to run its tasks
  // (sleep_until_woken). False where neither applies: that thread helps run the graph instead.
  bool park(Request& wait);
  void sleep_until_woken(Request& wait);
  // Runs host request r unless another thread took it first (the host node's task for it, or a
  // thread whose wait waits for it: sleep_until_woken); whether this call ran it.
  bool run_host_once(const RequestPtr& r);
  RequestPtr blocking_candidate(WaitWork& wait);                          // a pending device command safe to block on
  static bool ended_within(cl_event ev, std::chrono::microseconds spin);  // polls its status
  // r will not run (cancelled: `why` is the cause; failed: the driver refused it); it ends once
  // its predecessors have.
  void end_after_preds(const RequestPtr& r, Status s, std::string why);
  // A predecessor of h ended or was enqueued; on the streaming node `released` collects h when
  // nothing is left, elsewhere h is put to the streaming node.
  void release_held(const RequestPtr& h, RequestList* released);
  bool is_done(const RequestPtr& r);
  void release_consumer(const RequestPtr& consumer, Request* failed_pred);
  void ready(const RequestPtr& r);
  void arm_host_side(const RequestPtr& r);
  void calibrate_clock();
  void decide_idle_flush();  // async: sets idle_flush and the streaming node's policy

  const std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
  std::int64_t device_to_host_offset_ns_ = 0;

  cl::CommandQueue service_queue_;  // maps and unmaps host images, so they never queue behind transfers

  std::mutex submit_mutex_;
  // Requests put to the dispatcher node and not yet through its body (under submit_mutex_ only
  // submit() adds to it). At zero the node is idle, so the submitting thread may run the
  // dispatcher's step itself (Engine::submit).
  std::atomic<std::size_t> dispatcher_pending_{0};
  // Held by the one waiting thread that runs graph tasks (wait_request). Recursive: a helping thread
  // runs the program's own node bodies too, and one of those may wait again (a flow node's transfer
  // under sync); if that inner wait could not help, the tasks it waits for would have no thread on a
  // 2-core machine (tests/test_flow_nodes_one_worker.cpp).
  std::recursive_mutex helper_mutex_;
  std::uint64_t next_id_ = 1;
  // Under submit_mutex_: next_id_ as a wait_all() returned with nothing submitted after it. The
  // destructor's wait then has nothing to wait for, and a dump would show it as a second wait_all.
  std::uint64_t quiet_at_id_ = 0;
  // Requests submitted from inside a host task or hook of this engine, counted as they are
  // numbered: a wait_all() that saw this change while it waited waits again, for what those
  // submitted, as tbb::task_group::wait() waits for tasks its tasks add (Engine::wait_all).
  std::atomic<std::uint64_t> nested_submits_{0};
  // Requests other than waits submitted and not yet ended (ControllerOptions::max_in_flight).
  std::atomic<std::size_t> in_flight_{0};
  std::size_t max_in_flight_ = 0;    // set once, in the constructor
  void hold_back(std::size_t seen);  // waits for everything submitted so far (Engine::submit)
  std::uint64_t next_tile_id_ = 1;
  unsigned kernel_round_robin_ = 0;

  // The dispatcher's step and the hazard tracker it owns (graph_nodes/dispatcher.hpp).
  friend class DispatchStep;
  DispatchStep dispatch_step_;

  // The streaming node's step and what it owns: flushes, its backlog, the PoCL launch chain
  // (graph_nodes/opencl_streaming.hpp).
  friend class StreamingStep;
  StreamingStep streaming_step_;

  // The receiver's step and what it owns: the watched commands, the callbacks' hub and whether
  // callbacks are worth registering (graph_nodes/callback_receiver.hpp).
  friend class ReceiverStep;
  ReceiverStep receiver_step_{*this};

  std::mutex failures_mutex_;
  std::vector<Failure> failures_;

  mutable std::mutex history_mutex_;
  RequestList history_;  // every request, when recording
  FlowTopology flow_topology_{recording};
  std::shared_ptr<ControllerLife> life_ = std::make_shared<ControllerLife>();

  TypeSizeProbe type_sizes_;
  std::string fault_kernel_;  // HETFLOW_DEBUG_FAULT_KERNEL: its launches end as if they faulted
  std::atomic<bool> injected_fault_{false};
  bool fail_flush_ = false;  // HETFLOW_DEBUG_FAIL_FLUSH: clFlush reports an error (after flushing)
  bool unchecked_local_size_ = false;
  // Set once a fault took the context with it; every later request, tile and wait throws DeviceLost.
  std::atomic<bool> lost_{false};
  mutable std::mutex lost_mutex_;
  std::string lost_message_;
  bool steps_on_submitting_thread_ = true;  // unless HETFLOW_DEBUG_STEPS_ON_WORKERS
  unsigned graph_threads_ = 1;

  // The thread that made the engine, whose arena the graph runs in: tbb::flow::graph attaches to the
  // constructing thread's arena, or makes one of its own if that thread has none yet, so the thread
  // first joins its own (join_own_arena). Only this thread parks (park()): another would have to
  // enter the graph's arena, and with every slot taken that hands the wait to a worker, which a host
  // task blocked on that very thread never frees (tests/test_queue_order.cpp).
  std::thread::id arena_owner_ = (join_own_arena(), std::this_thread::get_id());
  static void join_own_arena();
  std::atomic<unsigned> parked_{0};  // waits parked now: the streaming step wakes them (wake_parked)

  // concurrent_wait: graph_.wait_for_all() from a waiting thread must not reset the context while
  // callbacks and workers keep putting messages (without the trait it does, on return).
  tbb::task_group_context graph_context_{tbb::task_group_context::isolated, tbb::task_group_context::concurrent_wait};
  tbb::flow::graph graph_{graph_context_};
  Dispatcher dispatcher_;
  Streaming streaming_;
  HostNode host_;
  Receiver receiver_;
  struct Wire {
    const char* from;
    const char* to;
    const char* label;
  };
  std::vector<Wire> wiring_;  // the graph's edges as the constructor made them (topology_dot)

  // Last: it calls poll_watched() from its thread, so it stops before anything else goes.
  CompletionPoller poller_{[this] { return receiver_step_.poll_watched(); }};
};

// The engine behind a controller, for the library's own code and the tests; users have no way to
// it (include/hetflow/controller.hpp keeps it private).
struct ControllerAccess {
  static Engine& engine(Controller& c) { return *c.engine_; }
  // Ends a controller's engine as ~Controller does, on the calling thread (src/deferred_teardown.cpp).
  static void end(std::unique_ptr<Engine> engine);
  static const Engine& engine(const Controller& c) { return *c.engine_; }
};
inline Engine& engine_of(Controller& c) { return ControllerAccess::engine(c); }
inline const Engine& engine_of(const Controller& c) { return ControllerAccess::engine(c); }

}  // namespace hetflow::detail
