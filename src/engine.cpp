#include "engine.hpp"

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "cl_call.hpp"
#include "driver_lock.hpp"
#include "log.hpp"
#include "settings.hpp"
#include "unflushed_probe.hpp"

namespace hetflow::detail {
namespace {

Policy policy_from(const ControllerOptions& o) {
  if (o.policy) return *o.policy;
  return env_policy().value_or(Policy::async);
}

unsigned kernel_queues_from(const ControllerOptions& o) {
  if (o.kernel_queues) return checked_kernel_queues(long(*o.kernel_queues), "kernel_queues");
  return env_kernel_queues().value_or(1);
}

// Every hazard is an explicit wait-list edge, so the async queues need not run in order; out of
// order, a CPU device (PoCL) runs independent commands of one queue at once. Default: out of order
// on CPU devices, in order on GPUs, whose speed was measured that way. Failures do not depend on
// it: nothing enqueued waits on anything that can fail but a device command itself (docs/drivers.md,
// "Failed user events"). Sync always has one in-order queue.
bool out_of_order_from(const ControllerOptions& o, Policy policy, const DeviceInfo& device) {
  if (policy == Policy::sync) return false;
  const QueueOrder fallback = (device.type & CL_DEVICE_TYPE_CPU) ? QueueOrder::out_of_order : QueueOrder::in_order;
  const QueueOrder order = o.queue_order ? *o.queue_order : env_queue_order().value_or(fallback);
  if (order == QueueOrder::in_order) return false;
  cl_command_queue_properties supported = 0;
  if (const cl_int err =
          clGetDeviceInfo(device.device(), CL_DEVICE_QUEUE_ON_HOST_PROPERTIES, sizeof supported, &supported, nullptr);
      err != CL_SUCCESS)
    throw OpenCLError(err, "clGetDeviceInfo(CL_DEVICE_QUEUE_ON_HOST_PROPERTIES) on " + device.name);
  return (supported & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
}

bool record_from(const ControllerOptions& o) {
  const bool asked = env_text("HETFLOW_DUMP") || env_text("HETFLOW_TRACE");
  if (o.record) {
    // The program's word wins; said, so a missing dump file is not a mystery.
    if (asked && !*o.record)
      log().warn("HETFLOW_DUMP / HETFLOW_TRACE: this controller writes nothing (ControllerOptions::record = false)");
    return *o.record;
  }
  return asked;
}

// The tile's byte size, without overflow, and within what the device can allocate at once.
void check_tile_size(const Extent& e, std::size_t elem_size, const std::string& name, const DeviceInfo& dev) {
  const std::string what = "tile '" + name + "' of " + std::to_string(e.x) + " x " + std::to_string(e.y) + " x " +
                           std::to_string(e.z) + " elements of " + std::to_string(elem_size) + " bytes";
  if (e.x == 0 || e.y == 0 || e.z == 0) throw UsageError(what + ": a zero extent");
  std::size_t bytes = elem_size;
  for (std::size_t n : {e.x, e.y, e.z})
    if (__builtin_mul_overflow(bytes, n, &bytes)) throw UsageError(what + ": its size in bytes overflows a size_t");
  if (dev.max_alloc_bytes && bytes > dev.max_alloc_bytes)
    throw TooLargeForDevice(what + " (" + std::to_string(bytes) + " bytes) exceeds the largest buffer device '" +
                            dev.name + "' allocates, " + std::to_string(dev.max_alloc_bytes) +
                            " bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE)");
}

// Checked first, so a malformed variable is reported before anything is built.
const ControllerOptions& checked(const ControllerOptions& o) {
  check_environment();
  return o;
}

std::uint64_t next_engine_serial() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// The engines that exist, by serial, with their contexts. A kernel holds its context, so no other
// context takes its address while the kernel can be asked about.
std::mutex live_engines_mutex;
std::map<std::uint64_t, cl_context>& live_engines() {
  static std::map<std::uint64_t, cl_context> live;
  return live;
}

}  // namespace

Engine::Engine(const ControllerOptions& options)
    : serial(next_engine_serial()),
      choice(select_device(checked(options).device,
                           options.device_origin.empty() ? "the program" : std::string_view(options.device_origin))),
      policy(policy_from(options)),
      // Checked under sync too (which has one queue): a bad value is an error whichever the policy.
      kernel_queue_count([&] {
        const unsigned asked = kernel_queues_from(options);
        return policy == Policy::sync ? 1u : asked;
      }()),
      recording(record_from(options)),
      profiling(options.profiling.value_or(recording)),
      out_of_order(out_of_order_from(options, policy, choice.device)),
      context(cl_call("clCreateContext", [&] { return cl::Context(choice.device.device); })),
      programs(context, choice.device.device),
      dispatch_step_(*this, recording),
      streaming_step_(*this, policy == Policy::sync ? 1 : 2 + kernel_queue_count,
                      launches_of_one_kernel_must_not_overlap(choice.device)),
      dispatcher_(graph_, tbb::flow::serial,
                  [this](const RequestPtr& r, Dispatcher::output_ports_type& ports) {
                    dispatch_and_hand_on(r, &ports);
                    dispatcher_pending_.fetch_sub(1, std::memory_order_acq_rel);
                  }),
      streaming_(graph_, tbb::flow::serial,
                 [this](const RequestPtr& r, Streaming::gateway_type&) {
                   std::lock_guard lock(streaming_step_.mutex());
                   streaming_step_.enqueue(r);
                 }),
      host_(graph_, tbb::flow::unlimited,
            [this](const RequestPtr& r) {
              run_host_once(r);  // unless a thread waiting for it ran it already
              return tbb::flow::continue_msg{};
            }),
      receiver_(graph_, tbb::flow::unlimited, [this](const RequestPtr& r) {
        receiver_step_.on_device_complete(r);
        return tbb::flow::continue_msg{};
      }) {
  if (choice.device.platform_name == "Oclgrind") serialize_driver_calls();  // src/driver_lock.hpp
  // Each edge is recorded as it is made: topology_dot() draws these, not a description of them.
  tbb::flow::make_edge(tbb::flow::output_port<0>(dispatcher_), streaming_);
  wiring_.push_back({"dispatcher", "streaming", "device requests"});
  tbb::flow::make_edge(streaming_, receiver_);
  wiring_.push_back({"streaming", "receiver", "completions (gateway)"});
  bind_graph_context();
  // The graph runs in the arena of the thread that made it (oneTBB attaches to it).
  graph_threads_ = unsigned(std::max<std::size_t>(
      1, std::min<std::size_t>(std::size_t(tbb::this_task_arena::max_concurrency()),
                               tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism))));

  cl_command_queue_properties props = profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
  if (out_of_order) props |= CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
  const unsigned n = policy == Policy::sync ? 1 : 2 + kernel_queue_count;
  for (unsigned i = 0; i < n; ++i)
    queues.push_back(
        cl_call("clCreateCommandQueue", [&] { return cl::CommandQueue(context, choice.device.device, props); }));
  if (streaming_step_.chains_launches()) programs.add_build_option(streaming_step_.kernel_cache().build_option());
  service_queue_ = cl_call("clCreateCommandQueue", [&] { return cl::CommandQueue(context, choice.device.device, 0); });
  if (profiling) calibrate_clock();
  // Fault injection for tests: behave as a runtime whose completion callbacks never arrive.
  if (env_switch("HETFLOW_DEBUG_DROP_CALLBACKS")) receiver_step_.drop_callbacks();
  fault_kernel_ = env_text("HETFLOW_DEBUG_FAULT_KERNEL").value_or("");
  steps_on_submitting_thread_ = !env_switch("HETFLOW_DEBUG_STEPS_ON_WORKERS");
  fail_flush_ = env_switch("HETFLOW_DEBUG_FAIL_FLUSH");
  unchecked_local_size_ = env_switch("HETFLOW_DEBUG_UNCHECKED_LOCAL_SIZE");
  if (const auto poll = env_poll_intervals())
    poller_.set_intervals(std::chrono::microseconds(poll->first), std::chrono::microseconds(poll->second));
  if (policy == Policy::async) decide_idle_flush();
  max_in_flight_ = options.max_in_flight;
  {
    std::lock_guard lock(live_engines_mutex);
    live_engines()[serial] = context();
  }
  log().info("controller on '{}' ({}), policy {}, {} kernel queue(s), {}, idle flush {}", choice.device.name,
             choice.reason, to_string(policy), kernel_queue_count,
             out_of_order ? "out-of-order queues" : "in-order queues", idle_flush);
}

void Engine::decide_idle_flush() {
  if (env_switch("HETFLOW_DEBUG_IDLE_FLUSH")) {
    idle_flush = "on (HETFLOW_DEBUG_IDLE_FLUSH=1)";
    return;
  }
  // 50 ms: a CPU device on a loaded machine may take that long to run anything, and a driver
  // that needs the flush costs one controller's start that much, once.
  const UnflushedProbe probe = probe_unflushed(context, queues[h2d_lane()], std::chrono::milliseconds(50));
  if (probe.runs_unflushed) streaming_step_.drop_start_flushes();
  idle_flush = probe.runs_unflushed ? "off (" + probe.why + ")" : "on (" + probe.why + ")";
}

Engine::~Engine() {
  try {
    wait_all();
  } catch (const DeviceLost& e) {
    log().error("controller ended on a lost device: {}", e.what());
  } catch (const std::exception& e) {
    log().error("controller ended with failed requests no wait reported: {}", e.what());
  }
  receiver_step_.detach();
  graph_.wait_for_all();
  std::lock_guard lock(live_engines_mutex);
  live_engines().erase(serial);
}

bool Engine::alive(std::uint64_t serial) {
  std::lock_guard lock(live_engines_mutex);
  return live_engines().count(serial) > 0;
}

bool Engine::alive(cl_context context) {
  std::lock_guard lock(live_engines_mutex);
  const auto& live = live_engines();
  return std::any_of(live.begin(), live.end(), [&](const auto& e) { return e.second == context; });
}

void Engine::fail_internally(const RequestPtr& r, const char* where, const std::exception& e) {
  log().error("request #{} '{}': {} threw: {}", r->id, r->name, where, e.what());
  if (r->kind == Kind::wait) {
    ready(r);  // releases its caller
    return;
  }
  finish(*r, Status::failed, std::string("hetflow internal error in ") + where + ": " + e.what());
}

void Engine::calibrate_clock() {
  // OpenCL profiling counters run on the device's clock. For a marker, the host time just before
  // its enqueue precedes its QUEUED stamp and the host time after its wait follows its END stamp,
  // which brackets the offset; the midpoint of the tightest bracket over a few tries is used.
  std::int64_t lower = INT64_MIN, upper = INT64_MAX;
  auto driver = driver_lock();
  for (int i = 0; i < 8; ++i) {
    cl::Event marker;
    const std::int64_t before = now_ns();
    queues[0].enqueueMarkerWithWaitList(nullptr, &marker);
    marker.wait();
    const std::int64_t after = now_ns();
    const auto queued = std::int64_t(marker.getProfilingInfo<CL_PROFILING_COMMAND_QUEUED>());
    const auto end = std::int64_t(marker.getProfilingInfo<CL_PROFILING_COMMAND_END>());
    lower = std::max(lower, before - queued);
    upper = std::min(upper, after - end);
  }
  device_to_host_offset_ns_ = lower <= upper ? lower + (upper - lower) / 2 : upper;
}

std::int64_t Engine::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_).count();
}

unsigned Engine::next_kernel_lane() {
  if (policy == Policy::sync) return 0;
  return 2 + (kernel_round_robin_++ % kernel_queue_count);
}

std::string Engine::lane_name(const Request& r) const {
  switch (r.kind) {
    case Kind::host:
    case Kind::release:
      return "host";
    case Kind::wait:
      return "wait";
    default:
      break;
  }
  if (policy == Policy::sync) return "queue";
  if (r.lane == 0) return "H2D";
  if (r.lane == 1) return "D2H";
  return "kernel" + std::to_string(r.lane - 2);
}

std::shared_ptr<TileState> Engine::make_tile(const Extent& extent, std::size_t elem_size, const char* elem_type,
                                             std::string name, bool device_only) {
  throw_if_lost();
  check_tile_size(extent, elem_size, name.empty() ? std::string("(unnamed)") : name, choice.device);
  auto s = std::make_shared<TileState>();
  {
    std::lock_guard lock(submit_mutex_);
    s->id = next_tile_id_++;
  }
  s->name = name.empty() ? "tile" + std::to_string(s->id) : std::move(name);
  s->extent = extent;
  s->elem_size = elem_size;
  s->elem_type = elem_type;
  s->elem_parsed = parse_cl_type(elem_type);
  s->device_only = device_only;
  if (device_only) s->latest.store(2, std::memory_order_relaxed);
  s->owner = serial;
  const std::size_t bytes = s->bytes();
  const std::string what = "allocating " + std::to_string(bytes) + " bytes for tile '" + s->name + "'";
  s->device_buffer = cl_call(what.c_str(), [&] { return cl::Buffer(context, CL_MEM_READ_WRITE, bytes); });
  // Runtimes may allocate device memory at a buffer's first use (NVIDIA's does), and that holds
  // back commands on other queues (perf/bench_copy_concurrency, "fresh"); allocating is this
  // call's job, so one byte is written now. Not clEnqueueMigrateMemObjects: NVIDIA's OpenCL
  // (driver 580) crashed in its own thread soon after migrating new buffers.
  auto driver = driver_lock();
  cl_call(what.c_str(), [&] { return service_queue_.enqueueFillBuffer(s->device_buffer, cl_uchar(0), 0, 1); });
  if (!device_only) {
    s->host_buffer =
        cl_call(what.c_str(), [&] { return cl::Buffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes); });
    s->host = cl_call(what.c_str(), [&] {
      return service_queue_.enqueueMapBuffer(s->host_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes);
    });
    s->unmap_queue = service_queue_;
  } else {
    cl_call(what.c_str(), [&] { return service_queue_.finish(); });
  }
  return s;
}

std::shared_ptr<TileState> Engine::make_alias_tile(const std::shared_ptr<TileState>& home) {
  throw_if_lost();
  check_tile_size(home->extent, home->elem_size, home->name, choice.device);
  auto s = std::make_shared<TileState>();
  {
    std::lock_guard lock(submit_mutex_);
    s->id = next_tile_id_++;
  }
  s->name = home->name;  // what the user called it: errors name the loop's side besides
  s->extent = home->extent;
  s->elem_size = home->elem_size;
  s->elem_type = home->elem_type;
  s->elem_parsed = home->elem_parsed;
  s->device_only = home->device_only;
  s->latest.store(home->device_only ? 2 : 1, std::memory_order_relaxed);
  s->owner = serial;
  const std::size_t bytes = s->bytes();
  const std::string what =
      "allocating " + std::to_string(bytes) + " bytes for tile '" + s->name + "' on another device";
  s->device_buffer = cl_call(what.c_str(), [&] { return cl::Buffer(context, CL_MEM_READ_WRITE, bytes); });
  auto driver = driver_lock();
  // As make_tile: the first use must not be what allocates.
  cl_call(what.c_str(), [&] { return service_queue_.enqueueFillBuffer(s->device_buffer, cl_uchar(0), 0, 1); });
  cl_call(what.c_str(), [&] { return service_queue_.finish(); });
  if (!home->device_only) {
    // No host buffer and no unmap queue of its own: unmapping stays the home tile's.
    s->host = home->host;
    s->host_of = home;
  }
  return s;
}

void Engine::refuse_blocking_inside_host_task(const std::string& what) const {
  const Request* task = host_task_on_this_thread();
  if (!task) return;
  throw UsageError(what + " inside " + (task->is_hook() ? "hook '" : "host task '") + task->name +
                   "' of the same controller would wait for the graph that runs the task itself. Submit "
                   "the follow-up as requests (non-blocking under the async policy: they are ordered after "
                   "this task wherever they share its tiles), or wait from outside the task.");
}

void Engine::dispatch_and_hand_on(const RequestPtr& r, Dispatcher::output_ports_type* ports) {
  try {
    dispatch_step_.dispatch(r);
  } catch (const std::exception& e) {
    // A node body that throws would leave the request pending for good.
    fail_internally(r, "the dispatcher", e);
    return;
  }
  if (!on_device(r->kind)) return;
  // Counted before the hand-over: the streaming node flushes what it held back when it runs dry.
  if (ports) {
    streaming_step_.handed_over();
    std::get<0>(*ports).try_put(r);
    return;
  }
  if (streaming_step_.handed_over(std::memory_order_acq_rel) == 0) {
    if (std::unique_lock lock(streaming_step_.mutex(), std::try_to_lock); lock) {
      streaming_step_.enqueue(r);
      return;
    }
  }
  streaming_.try_put(r);
}

namespace {
// What the calling thread's scopes ask of its submissions (collectors, flow node, ...). One object:
// in a shared library each thread_local read is a call (__tls_get_addr), and submit reads them all.
struct SubmitScopes {
  RequestList* launch_collector = nullptr;
  RequestList* transfer_collector = nullptr;
  RequestList* hook_collector = nullptr;
  std::vector<Access>* launch_writes_collector = nullptr;
  std::uint32_t submitting_flow_node = 0;
  RequestList* deferred_blocking = nullptr;
  const RequestList* hooks_after = nullptr;
};
thread_local SubmitScopes submit_scopes;
}  // namespace

void Engine::collect_commands(RequestList* kernels, RequestList* transfers, std::vector<Access>* launch_writes) {
  submit_scopes.launch_collector = kernels;
  submit_scopes.transfer_collector = transfers;
  submit_scopes.launch_writes_collector = launch_writes;
}

void Engine::collect_hooks(RequestList* hooks) { submit_scopes.hook_collector = hooks; }

Engine::FlowNodeScope::FlowNodeScope(std::uint32_t id) : saved_(submit_scopes.submitting_flow_node) {
  submit_scopes.submitting_flow_node = id;
}
Engine::FlowNodeScope::~FlowNodeScope() { submit_scopes.submitting_flow_node = saved_; }

Engine::DeferredBlocking::DeferredBlocking(Engine&) : saved_(submit_scopes.deferred_blocking) {
  submit_scopes.deferred_blocking = &deferred_;
}
Engine::DeferredBlocking::~DeferredBlocking() { submit_scopes.deferred_blocking = saved_; }

Engine::HooksAfter::HooksAfter(const RequestList& launches) : saved_(submit_scopes.hooks_after) {
  submit_scopes.hooks_after = &launches;
}
Engine::HooksAfter::~HooksAfter() { submit_scopes.hooks_after = saved_; }

bool Engine::launched_here(const Request& r) const {
  // submit_launch refuses a kernel of another context, so the kernel's context is the engine's.
  return r.kind == Kind::kernel && r.kernel().kernel.context()() == context();
}

void Engine::refuse_freed_tiles(const Request& r) const {
  // The Controller checked each tile before building r, but free(t) on another thread may have come
  // between that check and this lock, whose order is the program's: a request ordered after the
  // release would run on released buffers (a kernel on PoCL wrote into freed memory), so it is refused.
  if (r.kind == Kind::release) return;
  for (const auto& a : r.accesses)
    if (a.tile->freed.load(std::memory_order_acquire))
      throw UsageError("'" + r.name + "': tile '" + a.tile->name +
                       "' used after free (free() came first, from another thread)");
}

void Engine::submit(RequestPtr r) {
  // A copy, the scopes as the request is submitted: through a reference GCC derives the
  // thread_local's address again at each use (a __tls_get_addr call each in a shared library).
  const SubmitScopes scopes = submit_scopes;
  r->flow_node = scopes.submitting_flow_node;
  if (r->kind != Kind::wait) throw_if_lost();
  // The dispatcher adds the hazards' predecessors to these (HooksAfter).
  if (scopes.hooks_after && r->is_hook())
    for (const auto& p : *scopes.hooks_after)
      if (launched_here(*p) && !p->ended()) {
        r->preds.push_back(p);
        r->written_before.push_back({p->id, true});  // the hook is there to be told how they ended
      }
  // Under sync every request but a launch returns when done; a hook never blocks (it is the way to be
  // told without blocking).
  const bool blocks = policy == Policy::sync && r->kind != Kind::kernel && r->kind != Kind::wait && !r->is_hook();
  if (blocks) refuse_blocking_inside_host_task("'" + r->name + "' under the sync policy (it blocks until done)");
  if (max_in_flight_ != 0 && policy == Policy::async && r->kind != Kind::wait && !r->is_hook()) {
    const std::size_t now = in_flight_.load(std::memory_order_relaxed);
    // Only the program's own submissions wait: not a host task's or hook's, of any controller (the
    // graph that runs it may need its thread), nor those of hetflow's flow nodes and loops, which
    // submit holding their own locks, which the hooks that end their earlier requests take. Nor an
    // on_ready hook, anywhere: it is the way to be told without blocking (it still counts).
    if (now >= max_in_flight_ && !running_any_host_task() && !scopes.deferred_blocking &&
        scopes.submitting_flow_node == 0) {
      hold_back(now);
      throw_if_lost();  // the wait may have found the device gone
    }
  }
  {
    std::lock_guard lock(submit_mutex_);
    refuse_freed_tiles(*r);
    // Only requests that were taken (a chunk's body waits for what it collected), and before the
    // dispatch, after which r may end and let go of its accesses (Request::take_leftovers).
    if (scopes.launch_collector && r->kind == Kind::kernel) scopes.launch_collector->push_back(r);
    if (scopes.launch_writes_collector && r->kind == Kind::kernel)
      for (const auto& a : r->accesses)
        if (a.writes()) scopes.launch_writes_collector->push_back(a);
    if (scopes.transfer_collector && (r->kind == Kind::h2d || r->kind == Kind::d2h))
      scopes.transfer_collector->push_back(r);
    if (scopes.hook_collector && r->is_hook()) scopes.hook_collector->push_back(r);
    r->id = next_id_++;
    if (r->kind != Kind::wait) in_flight_.fetch_add(1, std::memory_order_relaxed);  // ended in finish()
    if (host_task_on_this_thread()) {  // after its number: a wait that saw no change covers it
      nested_submits_.fetch_add(1, std::memory_order_release);
      for (const auto& a : r->accesses) a.tile->nested_submits.fetch_add(1, std::memory_order_release);
    }
    if (r->kind == Kind::kernel) r->lane = next_kernel_lane();  // round robin, in program order
    if (recording) {
      r->submit_ns = now_ns();
      std::lock_guard h(history_mutex_);
      history_.push_back(r);
    }
    // When the dispatcher is idle (nothing queued or running: only this function feeds it, under
    // this lock) the calling thread runs its step, and the streaming node's too if that is idle,
    // instead of handing them to TBB workers: each hand-over between threads cost ~5-10 us on the
    // 16-core GPU host (perf/RESULTS.md, "Blocking requests"), and a blocking request or a
    // launch followed by a wait paid them all before the driver saw anything. A busy node keeps
    // its place: then the request queues behind the work ahead, in program order.
    if (steps_on_submitting_thread_ && dispatcher_pending_.load(std::memory_order_acquire) == 0) {
      dispatch_and_hand_on(r, nullptr);
    } else {
      dispatcher_pending_.fetch_add(1, std::memory_order_relaxed);
      dispatcher_.try_put(r);
    }
  }
  if (blocks && scopes.deferred_blocking) {
    scopes.deferred_blocking->push_back(std::move(r));
    return;
  }
  if (blocks) {
    auto w = make_request<WaitWork>(Kind::wait, "sync(" + r->name + ")");
    w->wait().on.push_back(std::move(r));
    wait_request(std::move(w));
    // Its wait may be the one that found the fault: it says the controller is lost at once, as
    // wait() does, and leaves the failures to a wait, as a blocking request always does (a loop's
    // sync chunk reads its commands' outcome, and the call's waits report them).
    throw_if_lost();
  }
}

void Engine::join_own_arena() {
  // A thread that never used TBB belongs to no arena until it runs a task.
  tbb::task_group first;
  first.run_and_wait([] {});
}

void Engine::bind_graph_context() {
  // oneTBB binds a graph's task_group_context on the first task spawned into it and writes its traits
  // then; graph::wait_for_all() reads them. Were that first spawn a driver's callback thread putting a
  // completion while a helping thread waits (parallel_for, ThreadSanitizer in CI), the two would race,
  // so one task spawned here binds the context before any other thread can reach the graph.
  tbb::flow::continue_node<tbb::flow::continue_msg> first(graph_, [](const tbb::flow::continue_msg& m) { return m; });
  first.try_put(tbb::flow::continue_msg{});
  graph_.wait_for_all();
}
namespace {
// Whether nothing on the device may still use r's tiles: it never reached the driver, or the driver
// says its command is over. A command failed by the engine for another's sake (a failed flush left it
// in its queue, a command it waited on failed) may still run: PoCL copied from the host image of a
// failed flush's H2D after its tile was freed. Those keep their tiles until reported, as before.
bool off_the_device(const Request& r) {
  cl_event e = r.event.load();
  if (!e) return true;
  cl_int status = CL_QUEUED;
  return clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS &&
         status <= CL_COMPLETE;
}
}  // namespace

void Engine::finish(Request& r, Status s, std::string error) {
  // Taken from r under r.m, used after it: each made only when r has some, as a command settled in
  // a stream has none but a dependant (a list's destructor is a call; callgrind, perf/RESULTS.md
  // 2026-11-29).
  std::optional<RequestList> waiters, held;
  std::optional<Request::DependantList> dependants;
  Request::Leftovers leftovers;  // destroyed last, without r.m (Request::take_leftovers)
  {
    std::lock_guard lock(r.m);
    if (r.status.load(std::memory_order_relaxed) != Status::pending) return;
    // Seen ended before its callback came (if it has one): that callback will bring no news.
    if (r.callback.load(std::memory_order_relaxed) == Request::Callback::registered)
      receiver_step_.judge_callback(r, false);
    r.error = std::move(error);
    if (!r.waiters.empty()) waiters.emplace().swap(r.waiters);
    if (!r.device_dependants.empty()) dependants.emplace().swap(r.device_dependants);
    if (!r.held.empty()) held.emplace().swap(r.held);
    r.running_preds.clear();
    if (r.take_poller_hold()) poller_.release();
    // Listed before r can be seen ended: a wait dispatched from now on counts r as ended and takes
    // its failures at once, so r's must already be there.
    if (s != Status::done && r.kind != Kind::wait) record_failure(r, s);
    // A done device command has completed; any other outcome is asked of the driver (a host request
    // or a wait has no command). A wait lets go of its tile and predecessors too.
    if (s == Status::done || off_the_device(r)) r.take_leftovers(leftovers);
    // Its writes stand over whatever failed under them: only a failed or cancelled request keeps
    // its failures behind for the hazard it stays (Engine::is_done).
    if (s == Status::done) r.failures_behind.reset();
    // Last, and still under r.m: a wait that finds r ended here may take and report its failure at
    // once, and the dispatcher must then see r as ended (is_done) for the next request, or that
    // request is cancelled by a failure already reported (test_random_programs, under load).
    r.status.store(s, std::memory_order_release);
  }
  if (r.kind != Kind::wait) in_flight_.fetch_sub(1, std::memory_order_relaxed);
  log_debug("finished #{} '{}': {}, releasing {} waiter(s)", r.id, r.name, to_string(s), waiters ? waiters->size() : 0);
  if (waiters)
    for (const auto& w : *waiters) release_consumer(w, s == Status::done ? nullptr : &r);
  if (s == Status::done) {
    if (held)
      for (const auto& h : *held) release_held(h, nullptr);
    return;
  }
  const std::string cause = dependency_cause(r, s);
  // Held-back requests that read what r wrote never reach the driver: the streaming node cancels
  // them once nothing they wait for is left (Engine::end_after_preds). The others are enqueued.
  if (held)
    for (const auto& h : *held) {
      cancel_if_dependent(*h, r, s);
      release_held(h, nullptr);
    }
  // Enqueued commands that waited on a command that failed on the device: OpenCL terminates them,
  // whatever the hazard that put its event in their wait list.
  if (dependants)
    for (const auto& d : *dependants) {
      cancel_because(*d, r, s);
      finish(*d, Status::cancelled, "not run: " + cause);
    }
}

void Engine::release_consumer(const RequestPtr& consumer, Request* failed_pred) {
  if (failed_pred) cancel_if_dependent(*consumer, *failed_pred, failed_pred->status.load());
  if (consumer->unmet.fetch_sub(1, std::memory_order_acq_rel) == 1) ready(consumer);
}

void Engine::ready(const RequestPtr& r) {
  log_debug("ready #{} '{}'", r->id, r->name);
  if (r->take_poller_hold()) poller_.release();
  if (r->kind == Kind::wait) {
    if (recording) r->end_ns = now_ns();
    finish(*r, Status::done);
    WaitWork& w = r->wait();
    tbb::task_handle wake;
    {
      std::lock_guard lock(r->m);
      w.released = true;
      wake = std::move(w.wake);
    }
    w.released_cv.notify_all();
    wake = {};  // a parked waiting thread returns (Engine::park)
    return;
  }
  std::string cause;
  {
    std::lock_guard lock(r->m);
    cause = r->cancel_cause;
  }
  if (on_device(r->kind)) {  // only device requests that will not run wait as consumers (end_after_preds)
    std::string failure;
    {
      std::lock_guard lock(r->m);
      failure = r->failure;
    }
    if (!failure.empty())
      finish(*r, Status::failed, std::move(failure));
    else
      finish(*r, Status::cancelled, "not run: " + cause);
    return;
  }
  if (r->kind == Kind::host && !cause.empty() && !r->is_hook()) {  // a hook runs and is told the cause
    finish(*r, Status::cancelled, "not run: " + cause);
    return;
  }
  // Marked ready, then the sleeping waits counted (both sequentially consistent, as
  // sleep_until_woken counts itself in before looking): a wait that saw it not ready is woken to run it.
  r->ready_to_run.store(true);
  if (any_parked()) {
    RequestList waits;
    {
      std::lock_guard lock(r->m);
      for (const auto& x : r->waiters)
        if (x->kind == Kind::wait) waits.push_back(x);
    }
    for (const auto& x : waits) {
      {
        std::lock_guard own(x->m);
        x->wait().woken = true;
      }
      x->wait().released_cv.notify_all();
    }
  }
  host_.try_put(r);
}

bool Engine::run_host_once(const RequestPtr& r) {
  if (r->claimed.exchange(true)) return false;
  run_host(r);
  return true;
}

void Engine::arm_host_side(const RequestPtr& r) {
  r->unmet.store(1, std::memory_order_relaxed);  // held while arming, so no predecessor releases it early
  bool waits_on_device = false;
  for (const auto& p : r->preds) {
    bool register_now = false, flush_only = false;
    Status ended = Status::pending;
    {  // p.m is released before cancel_if_dependent below takes it
      std::lock_guard lock(p->m);
      ended = p->status.load(std::memory_order_relaxed);
      if (ended == Status::pending) {
        p->waiters.push_back(r);
        r->unmet.fetch_add(1, std::memory_order_relaxed);
        if ((r->is_hook() || r->kind == Kind::host) && on_device(p->kind)) waits_on_device = true;
        if (r->kind == Kind::wait) {
          std::lock_guard own(r->m);
          (on_device(p->kind) ? r->wait().device_preds : r->wait().host_preds).push_back(p);
        }
        if (on_device(p->kind) && p->watch != Watch::registered) {
          if (p->event.load() && r->kind == Kind::wait) {
            // The waiting thread blocks on this one itself (wait_request): a callback would only
            // cost a driver call and a graph task. The command must be flushed to complete, though.
            flush_only = true;
          } else if (p->event.load()) {
            p->watch = Watch::registered;
            register_now = true;
          } else {
            p->watch = Watch::requested;  // the streaming node registers it right after enqueueing
          }
        }
      }
    }
    if (ended != Status::pending) {
      if (ended != Status::done) cancel_if_dependent(*r, *p, ended);
      continue;
    }
    if (register_now) receiver_step_.watch(p);
    if (flush_only) streaming_step_.flush_lane(p->lane);
  }
  r->preds.clear();
  // A wait armed after its thread parked: the commands it found enqueued are the thread's to block on.
  if (r->kind == Kind::wait && any_parked()) wake_parked(*r);
  if (waits_on_device) {  // released by ready() or finish(), which come after the arming ends
    r->holds_poller.store(true, std::memory_order_release);
    poller_.hold();
  }
  if (r->unmet.fetch_sub(1, std::memory_order_acq_rel) == 1) ready(r);
}

void Engine::flush(unsigned lane) {
  cl_int err = CL_SUCCESS;
  {
    auto driver = driver_lock();
    err = clFlush(queues[lane]());
  }
  if (fail_flush_ && err == CL_SUCCESS) err = CL_OUT_OF_RESOURCES;
  if (err != CL_SUCCESS) fail_lane(lane, err);
}

bool Engine::is_done(const RequestPtr& r) {
  // Only what the engine knows already; the driver is not asked. A status query costs 1-1.5 us on
  // NVIDIA beside a stream of enqueues (tools/drivers/live_events_probe.c, docs/drivers.md), and the
  // dispatcher asks for every predecessor of every request. A device command that ended unseen stays
  // a predecessor a little longer: its event joins a wait list, as in hand-written code, until the
  // streaming step, a wait or a poll settles it. A failed request stays a hazard until reported;
  // only for what reads after it (cancel_if_dependent), but a writer after it still waits for it.
  const Status s = r->status.load(std::memory_order_acquire);
  if (s == Status::done) return true;
  if (s == Status::pending || !r->reported.load(std::memory_order_acquire)) return false;
  // Reported, but a failed or cancelled request stays a hazard while a failure behind it is not: the
  // failed request's own access may be gone from the tracker, forgotten under this one's covering
  // write that never happened, and what reads there next would get data the failed request never
  // wrote. (One gone was reported: the controller keeps a failure until a wait takes it.)
  std::lock_guard lock(r->m);
  if (!r->failures_behind) return true;
  return std::all_of(r->failures_behind->begin(), r->failures_behind->end(), [](const std::weak_ptr<Request>& b) {
    const RequestPtr failed = b.lock();
    return !failed || failed->reported.load(std::memory_order_acquire);
  });
}

std::size_t Engine::tracked_accesses() const {
  // Only meaningful while the dispatcher is idle (tests call it after wait_all).
  return dispatch_step_.tracked_accesses();
}

}  // namespace hetflow::detail
