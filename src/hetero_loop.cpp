// The heterogeneous loop of include/hetflow/parallel_for.hpp (docs/parallel-for.md). Each side holds
// tokens: one per CPU worker, one for the device. A free token asks the scheduler for a chunk and
// submits it; its completion hook records the chunk's time and asks for the next. CPU chunks are
// completion hooks themselves (they run whatever the policy, never blocking); device chunks are the
// body's launches, a region D2H per write and a hook. The calling thread only waits for the end.
#include "hetero_loop.hpp"

#include <tbb/info.h>

#include <chrono>

#include "engine.hpp"
#include "log.hpp"
#include "loop_scheduler_spec.hpp"

namespace hetflow::detail {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
std::string range_text(Chunk c) { return "[" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")"; }
// The launches a device chunk's body submits, collected on this thread while it runs.
class LaunchesOf {
 public:
  explicit LaunchesOf(std::vector<RequestPtr>& into) { Engine::collect_launches(&into); }
  ~LaunchesOf() { Engine::collect_launches(nullptr); }
  LaunchesOf(const LaunchesOf&) = delete;
  LaunchesOf& operator=(const LaunchesOf&) = delete;
};

// A device chunk's time: from its kernels' profiling counters (first start to last end) where the
// queues profile, since completion notices can come a millisecond late (NVIDIA's callbacks, the
// poller's interval) and would swamp small chunks; else the host time from submission to the notice.
double device_seconds(const Engine& engine, const std::vector<RequestPtr>& kernels, double host_seconds) {
  std::int64_t first = -1, last = -1;
  for (const auto& k : kernels) {
    std::int64_t start = 0, end = 0;
    cl_event ev = k->event.load();
    if (!ev || !engine.device_times(ev, start, end)) return host_seconds;
    first = first < 0 ? start : std::min(first, start);
    last = std::max(last, end);
  }
  return kernels.empty() || last <= first ? host_seconds : double(last - first) * 1e-9;
}

unsigned default_cpu_workers() {
  // One thread of the arena is left for the device's completion hooks and the engine's steps: the
  // calling thread, which helps run the graph while it waits (LoopState::run).
  const int cores = tbb::info::default_concurrency();
  return unsigned(cores > 1 ? cores - 1 : 1);
}
}  // namespace

LoopState::LoopState(Controller& c, LoopOptions options, std::uint32_t flow_node)
    : c_(c),
      options_(std::move(options)),
      cpu_workers_(options_.cpu_workers ? options_.cpu_workers : default_cpu_workers()),
      scheduler_(make_loop_scheduler(options_.scheduler, cpu_workers_)),
      flow_node_(flow_node) {
  if (options_.device_slots == 0) throw UsageError("parallel_for: device_slots must be at least 1");
}

void LoopState::check(const LoopBody& body) {
  if (!body.cpu && !body.device) throw UsageError("parallel_for: the loop body has neither a cpu nor a device part");
  if (!body.writes) throw UsageError("parallel_for: the loop body must say what a chunk writes (LoopBody::writes)");
}

void LoopState::set_body(LoopBody body) {
  check(body);
  body_ = std::move(body);
}

bool LoopState::take(bool cpu, Chunk& chunk) {
  const std::size_t remaining = n_ - next_;
  std::size_t size = 0;
  if (!stopping_ && remaining > 0)
    size = cpu ? scheduler_->cpu_chunk(remaining, seconds_since(started_))
               : scheduler_->device_chunk(0, remaining, seconds_since(started_));
  // The last token left takes whatever the scheduler handed to nobody: every iteration runs.
  if (size == 0 && tokens_ == 1 && !stopping_) size = remaining;
  if (size == 0) {
    log().debug("parallel_for: a {} token stops, {} iterations left", cpu ? "cpu" : "device", remaining);
    --tokens_;
    return false;
  }
  chunk = Chunk{next_, next_ + size};
  log().debug("parallel_for: {} chunk {} of {} left", cpu ? "cpu" : "device", range_text(chunk), remaining);
  next_ += size;
  ++in_flight_;
  return true;
}

void LoopState::note_tiles(const std::vector<Access>& accesses) {
  for (const auto& a : accesses) tiles_.insert(a.tile);
}

void LoopState::chunk_ended(bool cpu, Chunk chunk, double seconds, const std::string& failure, double round_trip) {
  if (failure.empty()) {
    if (cpu)
      scheduler_->record_cpu(chunk.size(), seconds);
    else
      scheduler_->record_device(0, chunk.size(), seconds, round_trip);
  }
  std::unique_lock lock(m_);
  auto& side = report_.sides[cpu ? 0 : 1];
  side.iterations += chunk.size();
  side.chunks += 1;
  side.busy_seconds += seconds;
  if (!failure.empty()) {
    if (first_failure_.empty())
      first_failure_ = std::string(cpu ? "cpu" : "device") + " chunk " + range_text(chunk) + ": " + failure;
    stopping_ = true;
  }
  --in_flight_;
  notify_if_ended(lock);
}

void LoopState::notify_if_ended(std::unique_lock<std::mutex>& lock) {
  if (in_flight_ != 0 || tokens_ != 0) return;
  ended_.notify_all();
  if (!done_) return;
  auto done = std::move(done_);
  done_ = nullptr;
  lock.unlock();
  done(end_of_call());
}

void LoopState::next_cpu() {
  Chunk chunk;
  std::vector<Access> roles;
  {
    std::unique_lock lock(m_);
    if (!take(true, chunk)) {
      notify_if_ended(lock);
      return;
    }
    roles = body_.reads;
    for (auto& w : body_.writes(chunk)) roles.push_back(std::move(w));
    note_tiles(roles);
  }
  const std::string name = "cpu chunk " + range_text(chunk);
  Engine::FlowNodeScope made_by(flow_node_);
  try {
    c_.submit_hook(
        name,
        [this, chunk](const Outcome& o) {
          if (!o.ok()) {
            chunk_ended(true, chunk, 0, o.error);
            next_cpu();  // drops the token: the loop is stopping
            return;
          }
          const auto t0 = std::chrono::steady_clock::now();
          std::exception_ptr thrown;
          std::string failure;
          try {
            body_.cpu(chunk);
          } catch (const std::exception& e) {
            thrown = std::current_exception();
            failure = std::string("threw: ") + e.what();
          } catch (...) {
            thrown = std::current_exception();
            failure = "threw an exception that is not a std::exception";
          }
          chunk_ended(true, chunk, seconds_since(t0), failure);
          next_cpu();                                  // the next chunk, or the token's end
          if (thrown) std::rethrow_exception(thrown);  // the hook's request fails: a wait names it
        },
        std::move(roles));
  } catch (const std::exception& e) {
    chunk_ended(true, chunk, 0, std::string("was refused: ") + e.what());
    std::unique_lock lock(m_);
    --tokens_;
    notify_if_ended(lock);
  }
}

void LoopState::next_device() {
  Chunk chunk;
  std::vector<Access> writes;
  {
    std::unique_lock lock(m_);
    if (!take(false, chunk)) {
      notify_if_ended(lock);
      return;
    }
    writes = body_.writes(chunk);
    note_tiles(writes);
  }
  Engine::FlowNodeScope made_by(flow_node_);
  const auto t0 = std::chrono::steady_clock::now();
  auto kernels = std::make_shared<std::vector<RequestPtr>>();
  try {
    {
      LaunchesOf collecting(*kernels);
      body_.device(c_, chunk);
    }
    std::vector<Access> back;
    for (const auto& w : writes) {
      if (w.tile->device_only) {  // no host image: the hook waits for the device image
        back.push_back(device_image(Access{w.tile, w.box, Role::in}));
        continue;
      }
      c_.submit_transfer(false, Access{w.tile, w.box, Role::in});
      back.push_back(Access{w.tile, w.box, Role::in});
    }
    c_.submit_hook(
        "device chunk " + range_text(chunk),
        [this, chunk, t0, kernels](const Outcome& o) {
          const double round_trip = seconds_since(t0);
          const double seconds = device_seconds(engine_of(c_), *kernels, round_trip);
          kernels->clear();  // their events and arguments go now, not with the hook
          chunk_ended(false, chunk, seconds, o.ok() ? std::string() : o.error, round_trip);
          next_device();
        },
        std::move(back));
  } catch (const std::exception& e) {
    chunk_ended(false, chunk, 0, std::string("was refused: ") + e.what());
    std::unique_lock lock(m_);
    --tokens_;
    notify_if_ended(lock);
  }
}

void LoopState::device_chunk_synchronously(Chunk chunk) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string failure;
  std::vector<RequestPtr> kernels;
  try {
    {
      LaunchesOf collecting(kernels);
      body_.device(c_, chunk);
    }
    for (const auto& w : body_.writes(chunk))
      if (!w.tile->device_only) c_.submit_transfer(false, Access{w.tile, w.box, Role::in});  // blocks (sync)
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const double round_trip = seconds_since(t0);
  chunk_ended(false, chunk, device_seconds(engine_of(c_), kernels, round_trip), failure, round_trip);
}

void LoopState::begin(std::size_t n) {
  auto& engine = engine_of(c_);
  Engine::FlowNodeScope made_by(flow_node_);
  started_ = std::chrono::steady_clock::now();
  scheduler_->restart(n, last_call_seconds_);
  {
    std::lock_guard lock(m_);
    n_ = n;
    next_ = 0;
    in_flight_ = 0;
    stopping_ = false;
    first_failure_.clear();
    tiles_.clear();
    report_ = LoopReport{};
    report_.sides = {LoopReport::Side{"cpu"}, LoopReport::Side{engine.choice.device.name}};
    note_tiles(body_.reads);
    // Under sync the calling thread is the device's one token (LoopState::device_chunk_synchronously).
    const unsigned device_tokens = !body_.device ? 0 : engine.policy == Policy::sync ? 1 : device_slots_;
    // The tokens are counted before any is handed out, so no chunk can see the call ended early.
    tokens_ = n == 0 ? 0 : (body_.cpu ? cpu_workers_ : 0) + device_tokens;
  }
  if (n == 0) return;
  if (body_.device)
    for (const auto& r : body_.reads)
      if (!r.tile->device_only) c_.submit_transfer(true, Access{r.tile, r.box, Role::in});
  if (body_.cpu)
    for (unsigned i = 0; i < cpu_workers_; ++i) next_cpu();
  if (!body_.device) return;
  if (engine.policy == Policy::sync) {
    // Under sync every transfer blocks, which a hook may not do: the calling thread is the
    // device's token.
    for (;;) {
      Chunk chunk;
      {
        std::unique_lock lock(m_);
        if (!take(false, chunk)) {
          notify_if_ended(lock);
          break;
        }
        note_tiles(body_.writes(chunk));
      }
      device_chunk_synchronously(chunk);
    }
    return;
  }
  for (unsigned i = 0; i < device_slots_; ++i) next_device();
}

LoopState::Ended LoopState::end_of_call() {
  std::lock_guard lock(m_);
  running_ = false;
  Ended e;
  report_.seconds = seconds_since(started_);
  last_call_seconds_ = report_.seconds;
  report_.scheduler = scheduler_->name();
  log().debug("parallel_for over {}: cpu {} iterations in {} chunks, device {} in {}; {}", n_,
              report_.sides[0].iterations, report_.sides[0].chunks, report_.sides[1].iterations,
              report_.sides[1].chunks, report_.scheduler);
  e.report = report_;
  e.failure = first_failure_;
  e.tiles.assign(tiles_.begin(), tiles_.end());
  return e;
}

LoopState::Ended LoopState::run_to_end(std::size_t n) {
  auto& engine = engine_of(c_);
  if (const Request* task = engine.host_task_on_this_thread())
    throw UsageError("parallel_for inside host task '" + task->name +
                     "' of the same controller would wait for the graph that runs the task");
  claim_and_begin(n);
  // The calling thread helps run the graph's tasks rather than only sleep: with a CPU token per
  // worker thread, the device's completion hooks would otherwise find every worker busy with a CPU
  // chunk and the device would idle until one ended (seed 002's starved GPU token, Fig. 47; seen on
  // the H200 as the device getting 1.6 % of a Barnes-Hut loop it runs 140x faster than the CPU).
  {
    std::unique_lock lock(m_);
    const auto all_ended = [this] { return in_flight_ == 0 && tokens_ == 0; };
    while (!all_ended()) {
      lock.unlock();
      engine.help_run_graph();  // returns once the graph is idle: the device's chunk is in flight
      lock.lock();
      ended_.wait_for(lock, std::chrono::milliseconds(1), all_ended);
    }
  }
  return end_of_call();
}

LoopReport LoopState::run(std::size_t n) {
  Ended e = run_to_end(n);
  // The chunks' own requests report their failures (a body's exception, a kernel's error) here.
  for (const auto& t : e.tiles) c_.wait_tile(t);
  if (!e.failure.empty()) throw Error("parallel_for: " + e.failure);
  return e.report;
}

void LoopState::claim_and_begin(std::size_t n, std::function<void(Ended)> done) {
  {
    std::lock_guard lock(m_);
    // One call at a time (its chunks and the scheduler's state are the loop's): a second would
    // corrupt the first's hand-out and wait for ever, so it is refused.
    if (running_)
      throw UsageError(
          "parallel_for: this loop is already running a call (one call at a time per HeteroLoop; make "
          "one HeteroLoop per thread)");
    running_ = true;
    done_ = std::move(done);
  }
  try {
    begin(n);
  } catch (...) {  // refused before any chunk was handed out (a read's transfer): no end to report
    std::lock_guard lock(m_);
    done_ = nullptr;
    tokens_ = 0;
    running_ = false;
    throw;
  }
}

void LoopState::start(std::size_t n, std::function<void(Ended)> done) {
  if (engine_of(c_).policy == Policy::sync)
    throw UsageError("a started loop needs the async policy: under sync every transfer blocks (use run)");
  claim_and_begin(n, std::move(done));
  std::unique_lock lock(m_);
  notify_if_ended(lock);  // n == 0, or every chunk already ended
}

}  // namespace hetflow::detail

namespace hetflow {

HeteroLoop::HeteroLoop(Controller& device, LoopBody body, LoopOptions options) : controller_(device) {
  detail::LoopState::check(body);
  state_ = std::make_unique<detail::LoopState>(
      device, std::move(options), detail::engine_of(device).flow_topology().add_node("parallel_for", "parallel_for"));
  state_->set_body(std::move(body));
}
HeteroLoop::~HeteroLoop() = default;
LoopReport HeteroLoop::operator()(std::size_t n) {
  detail::engine_of(controller_).flow_topology().arrived({}, state_->flow_node());  // a call, in the dumps
  return state_->run(n);
}

}  // namespace hetflow
