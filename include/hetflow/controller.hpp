#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <hetflow/access.hpp>
#include <hetflow/detail/unique_function.hpp>
#include <hetflow/device.hpp>
#include <hetflow/outcome.hpp>
#include <hetflow/program.hpp>
#include <hetflow/range.hpp>
#include <hetflow/tile.hpp>

namespace hetflow {

// async: transfers, kernels and host tasks overlap wherever their tiles allow (one H2D queue, one
// D2H queue, kernel_queues kernel queues). sync: one queue, and every request except a kernel
// launch and an on_ready hook returns only when it is done — the baseline overlap is measured
// against. A hook returns at once under either: it is the way to be told without blocking. A
// blocking request leaves failures to a wait; one whose wait finds the controller lost throws
// DeviceLost (its failures too are left to a wait, which throws DeviceLost with them).
enum class Policy { async, sync };
const char* to_string(Policy p);
// "async" or "sync"; throws UsageError naming the text otherwise.
Policy parse_policy(const std::string& text);

// How the async queues are created. Hazards are wait-list edges either way; out of order, a CPU
// device runs independent commands of one queue at once.
enum class QueueOrder { in_order, out_of_order };

struct ControllerOptions {
  std::string device{};  // a device selection (see select_device); empty = HETFLOW_DEVICE or default
  std::string
      device_origin{};  // who gave `device`, as a selection that matches nothing names it; empty = "the program"
  std::optional<Policy> policy{};           // unset = HETFLOW_POLICY, else async
  std::optional<unsigned> kernel_queues{};  // unset = HETFLOW_KERNEL_QUEUES, else 1 (async only)
  // unset = HETFLOW_QUEUE_ORDER, else out of order on CPU devices and in order on GPUs (async only;
  // falls back to in order where the device cannot run a queue out of order)
  std::optional<QueueOrder> queue_order{};
  // Keep every request for dumps: what its record needs (names, ids, times, edges), not its tiles,
  // so a dropped tile still goes at once. Unset = on when HETFLOW_DUMP or HETFLOW_TRACE is set.
  std::optional<bool> record{};
  // OpenCL profiling on every queue: the device times in dumps and traces. It costs ~5 us per
  // kernel on NVIDIA's OpenCL, so unset = on only when recording.
  std::optional<bool> profiling{};
  // Backpressure (async): once this many requests are submitted and not yet ended, a submission
  // from the program's threads first waits for everything submitted before it (shown as a wait
  // "held back: ..." in dumps), so a producer that outruns its host tasks or device holds at most
  // this many (~1 KB each) rather than growing without bound. Submissions from inside host tasks
  // and hooks (they would wait for the graph that runs them), and those of hetflow's flow nodes and
  // parallel_for (a limiter_node, the loop's tokens bound them), are never held back, nor is an
  // on_ready hook from any thread (it is the way to be told without blocking). 0 = no limit.
  std::size_t max_in_flight = 65536;
};

namespace detail {
class Engine;
struct ControllerAccess;  // the library's and its tests' way to the engine (src/engine.hpp)
}  // namespace detail
namespace flow::detail {
class NodeCore;
}
namespace detail {
class LoopState;
}
struct RequestRecord;

// One per device. Owns the OpenCL context and queues, the tiles' images, the program cache and the
// flow graph that runs the requests. Thread safety: submissions (move_to, move_from, launch,
// host_task, free), waits, tile and kernel creation may come from any thread at once; submissions
// are ordered by a lock, and that order is the program order hazards follow. Two threads waiting
// on the same tile both return when it is done; each failure is reported to one of them.
class Controller {
 public:
  explicit Controller(const ControllerOptions& options = {});
  explicit Controller(Policy policy) : Controller(options_with(policy)) {}
  // Waits for everything submitted, including what host tasks and hooks submit meanwhile (errors,
  // DeviceLost included, are logged, not thrown). Run inside one of its own host tasks or hooks
  // (one that held the last shared_ptr to it), it returns at once instead, and the controller's
  // work, dumps and end go on on a thread of the library's once that task has returned (joined at
  // the process's exit). One held only by its own requests not yet run (a host task's capture) is
  // not ended by anything but them: a program that returns from main before they run loses that
  // work and its HETFLOW_DUMP, without a word — keep a reference and wait before returning.
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Fixed at construction: safe from any thread.
  const DeviceInfo& device() const;
  const std::string& device_reason() const;
  Policy policy() const;
  unsigned kernel_queues() const;
  const cl::Context& context() const;
  ProgramCache& programs();  // thread-safe itself (see ProgramCache)

  // Thread-safe: builds go through the program cache's lock. `file` is found, and its own directory
  // put on its include path, as ProgramCache::from_file says (hetflow/program.hpp).

  Kernel kernel(const std::string& file, const std::string& name, const std::string& build_options = {});
  Kernel kernel_from_source(const std::string& source, const std::string& name, const std::string& build_options = {});

  // Thread-safe. A tile with a pinned host image and a device image, both uninitialised: write the host image
  // (or a host task's out()) and move_to, or fill the device image with a kernel, before reading.
  // Throws UsageError for a zero extent, a byte size that overflows or exceeds the device's largest
  // allocation, and OpenCLError if the driver cannot allocate it.
  template <class T>
  Tile<T> tile(const Extent& extent, std::string name = {}) {
    return Tile<T>(make_tile(extent, sizeof(T), detail::cl_type_name<T>(), std::move(name), false));
  }
  // A tile with a device image only (kernels' scratch space); as tile() otherwise.
  template <class T>
  Tile<T> device_tile(const Extent& extent, std::string name = {}) {
    return Tile<T>(make_tile(extent, sizeof(T), detail::cl_type_name<T>(), std::move(name), true));
  }

  // Every request (move_to, move_from, launch, host_task, on_ready, free) is thread-safe: the submit
  // lock orders them, and that order is their program order.
  // Host image → device image (of the whole tile or a region).
  template <class X>
  void move_to(const X& t) {
    submit_transfer(true, in(t));
  }
  // Device image → host image.
  template <class X>
  void move_from(const X& t) {
    submit_transfer(false, in(t));
  }

  // Runs `kernel` over `range`. Arguments in the kernel's order: in(t)/out(t)/io(t) for buffers
  // (tiles or regions), local_mem<T>(n) for __local, scalars by value. A region argument passes
  // the whole buffer: the box only says what the launch reads or writes, for the hazards — index
  // it yourself (Range::offset(), or a scalar). One tile may appear in several arguments (in(a)
  // and out(a), disjoint or not). Checked here (UsageError): the arguments against the kernel's
  // parameters (a tile's element type against the pointer's: size, kind and signedness; a scalar's
  // size and kind; for a type that is no OpenCL C built-in — a typedef, a struct, size_t — the size
  // the device gives it, asked once per argument by building the kernel's source with a probe that
  // reads sizeof; half* takes cl_half tiles, which are cl_ushort in C++), the range (a local size or offset beyond its
  // dimensions), local memory and work-group sizes against the device's limits, and, for a kernel that declares
  // reqd_work_group_size, a local size missing or other than that one. What the driver refuses
  // still fails the request, reported by a later wait (RequestFailed naming the OpenCL error).
  template <class... Args>
  void launch(const Kernel& kernel, const Range& range, Args&&... args) {
    submit_launch(kernel, range, {detail::to_kernel_arg(std::forward<Args>(args))...});
  }

  // Runs fn() on a TBB worker once the host images it declares are ready (fn may be move-only); fn may read the in()
  // tiles' and write the out()/io() tiles' host images. An exception from fn fails the task and
  // cancels what depends on it (what reads what it was to write; see wait()). Inside fn, requests
  // may be submitted to this controller under the async policy (they are ordered after everything
  // submitted before them); a call that would block on this controller — wait(), wait_all(), or
  // under sync any request but a launch or on_ready — throws UsageError instead, since it would wait for the graph that
  // runs fn. Nor may fn block on another request by other means (a flag another host task sets): host tasks share TBB's
  // few threads, and with all of them blocked the one it waits for never runs; declare the order (out(t) then in(t)).
  // Nor on a flag the program sets only after submitting more: a submission may wait for fn first
  // (ControllerOptions::max_in_flight).
  template <class F, class... Roles>
    requires std::is_invocable_v<F&>
  void host_task(std::string name, F&& fn, Roles&&... roles) {
    submit_host(std::move(name), detail::UniqueFunction<void()>(std::forward<F>(fn)),
                {Access(std::forward<Roles>(roles))...});
  }
  template <class F, class... Roles>
    requires std::is_invocable_v<F&>
  void host_task(F&& fn, Roles&&... roles) {
    host_task(std::string("host_task"), std::forward<F>(fn), std::forward<Roles>(roles)...);
  }

  // The completion hook: calls fn(outcome) on a TBB worker once every request submitted so far that a
  // host task declaring `roles` would wait for has ended. Unlike a host task, fn runs whatever became
  // of them: outcome.ok() says whether they all succeeded, outcome.error names the first that did not
  // (its failure is still reported by a wait, as ever). When they succeeded fn may use the declared
  // host images as a host task does, and later requests on those tiles wait for fn. device_image(in(t))
  // waits for the commands writing t's device image instead (a kernel's end), with no transfer.
  // Never blocks, under the sync policy and ControllerOptions::max_in_flight too, so it may be called from a host task
  // or hook under either policy; no thread blocks or spins for it while the device works: the engine learns of the
  // commands' end from a sleeping poll (every ≤ 1 ms) while a hook waits, and from the driver's callbacks where they
  // come sooner than that (PoCL's; not NVIDIA's). fn runs once and may be move-only (a lambda owning a
  // std::unique_ptr). fn may submit requests (async policy, as in a host task); if it throws, a later wait reports it
  // as a failed request. This is what flow-graph nodes (hetflow/flow.hpp) are built on. Like host tasks, hooks run on
  // TBB workers: with tbb::global_control's max_allowed_parallelism at 1 there is none, and they
  // run only while a thread waits (wait(), wait_all(), a flow graph's wait_for_all()).
  template <class F, class... Roles>
    requires std::is_invocable_v<F&, const Outcome&>
  void on_ready(std::string name, F&& fn, Roles&&... roles) {
    submit_hook(std::move(name), detail::UniqueFunction<void(const Outcome&)>(std::forward<F>(fn)),
                {Access(std::forward<Roles>(roles))...});
  }
  template <class F, class... Roles>
    requires std::is_invocable_v<F&, const Outcome&>
  void on_ready(F&& fn, Roles&&... roles) {
    on_ready(std::string("on_ready"), std::forward<F>(fn), std::forward<Roles>(roles)...);
  }

  // Thread-safe, any number of threads at once; never from inside a host task or hook of this
  // controller (UsageError). Blocks until every request submitted so far on `t` is done; throws RequestFailed for the
  // requests touching `t` that failed or were cancelled and that no wait has reported yet. Each
  // failure is reported once; until then it cancels whatever depends on it — what reads data it
  // wrote, or that a request cancelled because of it never wrote — and nothing else: a request that
  // only overwrites what it read or wrote (out(t), move_to's device image, move_from's host image)
  // runs after it. After that `t` can be used again as if the failed request had never been
  // submitted. A request cancelled because of a failure on another tile keeps cancelling what reads
  // its writes on `t` until that failure is reported too (by a wait on its tile, or wait_all()); its
  // cause names that failure. If the
  // controller is lost by then (a device fault, often one this wait found) it throws DeviceLost
  // instead, carrying those failures: the wait that learns the device is gone says so, and nothing
  // is worth retrying.
  // While it waits, the thread that made the controller runs the controller's pending tasks, host
  // tasks included (as oneTBB's waits do): a host task must not wait for something that thread
  // does only after its wait, and once its requests are done the wait returns when the task it is
  // running ends, so an unrelated long host task it took up delays it (as it would
  // tbb::task_group::wait()). Another thread runs only the host tasks and hooks its wait waits for,
  // directly once they are ready, and sleeps meanwhile: it returns as soon as its requests are
  // done, whatever else still runs; wait from such a thread where that matters. Requests on `t`
  // that this controller's host tasks or hooks submit before the wait's requests are all done are
  // waited for too (see wait_all()); work that reaches `t` only later, through another tile (a hook
  // on `u`, told of a kernel that a host task on `t` launched, then submits on `t`), is not: wait_all() covers it.
  template <class T>
  void wait(const Tile<T>& t) {
    (void)t.extent();
    wait_tile(t.shared_state());
  }
  // Blocks until everything submitted so far is done, and what this controller's host tasks and
  // hooks submit while it waits, levels deep (as tbb::task_group::wait() waits for the tasks its
  // tasks add: a host task's follow-up kernel and transfer back are done when it returns); what
  // other program threads submit meanwhile may be waited for too, what another controller's tasks
  // submit to this one is not. Throws RequestFailed naming every request
  // that failed or was cancelled and that no wait has reported yet (DeviceLost with them, if the
  // controller is lost by then, as wait(t)).
  void wait_all();

  // Releases the tile once the requests already submitted on it are done; those requests (host
  // tasks included) still use it. From the call on, any other use of any handle to it — a new
  // request, reading its host image — is a UsageError.
  template <class T>
  void free(Tile<T>& t) {
    (void)t.extent();
    free_tile(t.shared_state());
  }

  // Thread-safe; a snapshot of what was recorded for dumps (requires recording, see
  // ControllerOptions::record).
  bool recording() const;
  std::vector<RequestRecord> records() const;
  // The flow graph that runs the requests, as Graphviz DOT. Thread-safe (fixed at construction).
  std::string topology_dot() const;

 private:
  static ControllerOptions options_with(Policy p) {
    ControllerOptions o;
    o.policy = p;
    return o;
  }
  std::shared_ptr<detail::TileState> make_tile(const Extent&, std::size_t elem_size, const char* elem_type,
                                               std::string name, bool device_only);
  void submit_transfer(bool to_device, Access access);
  void submit_launch(const Kernel& kernel, const Range& range, std::vector<detail::KernelArg> args);
  void submit_host(std::string name, detail::UniqueFunction<void()> fn, std::vector<Access> accesses);
  void submit_hook(std::string name, detail::UniqueFunction<void(const Outcome&)> fn, std::vector<Access> accesses);
  friend class flow::detail::NodeCore;
  friend class detail::LoopState;
  friend struct detail::ControllerAccess;
  explicit Controller(std::unique_ptr<detail::Engine> adopted);  // ends an engine (src/deferred_teardown.cpp)
  void wait_tile(const std::shared_ptr<detail::TileState>& tile);
  void free_tile(const std::shared_ptr<detail::TileState>& tile);

  std::unique_ptr<detail::Engine> engine_;
};

}  // namespace hetflow
