// The heterogeneous loop of include/hetflow/parallel_for.hpp (docs/parallel-for.md). Each side holds
// tokens: one per CPU worker, one for the device. A free token asks the scheduler for a chunk and
// submits it; its completion hook records the chunk's time and asks for the next. CPU chunks are
// completion hooks themselves (they run whatever the policy, never blocking); device chunks are the
// body's launches, a region D2H per write and a hook. The calling thread only waits for the end.
#include <hetflow/parallel_for.hpp>

#include <tbb/info.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

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

class LoopState {
 public:
  LoopState(Controller& c, LoopBody body, LoopOptions options)
      : c_(c),
        body_(std::move(body)),
        options_(std::move(options)),
        cpu_workers_(options_.cpu_workers ? options_.cpu_workers : default_cpu_workers()),
        scheduler_(make_loop_scheduler(options_.scheduler, cpu_workers_)) {
    if (options_.device_slots == 0) throw UsageError("parallel_for: device_slots must be at least 1");
    if (!body_.cpu && !body_.device)
      throw UsageError("parallel_for: the loop body has neither a cpu nor a device part");
    if (!body_.writes) throw UsageError("parallel_for: the loop body must say what a chunk writes (LoopBody::writes)");
  }

  LoopReport run(std::size_t n);

 private:
  void next_cpu();
  void next_device();
  // Hands out the next chunk to a token of one side, or drops the token (false). Under m_.
  bool take(bool cpu, Chunk& chunk);
  void chunk_ended(bool cpu, Chunk chunk, double seconds, const std::string& failure);
  void note_tiles(const std::vector<Access>& accesses);  // under m_
  void device_chunk_synchronously(Chunk chunk);          // sync policy: from the calling thread

  Controller& c_;
  LoopBody body_;
  LoopOptions options_;
  unsigned cpu_workers_;
  std::unique_ptr<LoopScheduler> scheduler_;
  unsigned device_slots_ = options_.device_slots;
  double last_call_seconds_ = 0;

  // One call's state, under m_.
  std::mutex m_;
  std::condition_variable ended_;
  std::size_t n_ = 0, next_ = 0;
  unsigned tokens_ = 0, in_flight_ = 0;
  bool stopping_ = false;
  std::string first_failure_;
  LoopReport report_;
  std::set<std::shared_ptr<TileState>> tiles_;
};

bool LoopState::take(bool cpu, Chunk& chunk) {
  const std::size_t remaining = n_ - next_;
  std::size_t size = 0;
  if (!stopping_ && remaining > 0)
    size = cpu ? scheduler_->cpu_chunk(remaining) : scheduler_->device_chunk(0, remaining);
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

void LoopState::chunk_ended(bool cpu, Chunk chunk, double seconds, const std::string& failure) {
  if (failure.empty()) {
    if (cpu)
      scheduler_->record_cpu(chunk.size(), seconds);
    else
      scheduler_->record_device(0, chunk.size(), seconds);
  }
  std::lock_guard lock(m_);
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
  if (in_flight_ == 0 && tokens_ == 0) ended_.notify_all();
}

void LoopState::next_cpu() {
  Chunk chunk;
  std::vector<Access> roles;
  {
    std::lock_guard lock(m_);
    if (!take(true, chunk)) {
      if (in_flight_ == 0 && tokens_ == 0) ended_.notify_all();
      return;
    }
    roles = body_.reads;
    for (auto& w : body_.writes(chunk)) roles.push_back(std::move(w));
    note_tiles(roles);
  }
  const std::string name = "cpu chunk " + range_text(chunk);
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
    std::lock_guard lock(m_);
    --tokens_;
    if (in_flight_ == 0 && tokens_ == 0) ended_.notify_all();
  }
}

void LoopState::next_device() {
  Chunk chunk;
  std::vector<Access> writes;
  {
    std::lock_guard lock(m_);
    if (!take(false, chunk)) {
      if (in_flight_ == 0 && tokens_ == 0) ended_.notify_all();
      return;
    }
    writes = body_.writes(chunk);
    note_tiles(writes);
  }
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
          const double seconds = device_seconds(engine_of(c_), *kernels, seconds_since(t0));
          kernels->clear();  // their events and arguments go now, not with the hook
          chunk_ended(false, chunk, seconds, o.ok() ? std::string() : o.error);
          next_device();
        },
        std::move(back));
  } catch (const std::exception& e) {
    chunk_ended(false, chunk, 0, std::string("was refused: ") + e.what());
    std::lock_guard lock(m_);
    --tokens_;
    if (in_flight_ == 0 && tokens_ == 0) ended_.notify_all();
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
  chunk_ended(false, chunk, device_seconds(engine_of(c_), kernels, seconds_since(t0)), failure);
}

LoopReport LoopState::run(std::size_t n) {
  auto& engine = engine_of(c_);
  if (const Request* task = engine.host_task_on_this_thread())
    throw UsageError("parallel_for inside host task '" + task->name +
                     "' of the same controller would wait for the graph that runs the task");
  const auto t0 = std::chrono::steady_clock::now();
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
    tokens_ = (body_.cpu ? cpu_workers_ : 0) + device_tokens;
  }
  const bool sync_device = body_.device && engine.policy == Policy::sync;
  if (n > 0) {
    if (body_.device)
      for (const auto& r : body_.reads)
        if (!r.tile->device_only) c_.submit_transfer(true, Access{r.tile, r.box, Role::in});
    if (body_.cpu)
      for (unsigned i = 0; i < cpu_workers_; ++i) next_cpu();
    if (sync_device) {
      // Under sync every transfer blocks, which a hook may not do: the calling thread is the
      // device's token.
      for (;;) {
        Chunk chunk;
        {
          std::lock_guard lock(m_);
          if (!take(false, chunk)) break;
          note_tiles(body_.writes(chunk));
        }
        device_chunk_synchronously(chunk);
      }
    } else if (body_.device) {
      for (unsigned i = 0; i < device_slots_; ++i) next_device();
    }
  } else {
    std::lock_guard lock(m_);
    tokens_ = 0;
  }
  // The calling thread helps run the graph's tasks rather than only sleep: with a CPU token per
  // worker thread, the device's completion hooks would otherwise find every worker busy with a CPU
  // chunk and the device would idle until one ended (seed 002's starved GPU token, Fig. 47; seen on
  // the H200 as the device getting 1.6 % of a Barnes-Hut loop it runs 140x faster than the CPU).
  std::unique_lock lock(m_);
  const auto all_ended = [this] { return in_flight_ == 0 && tokens_ == 0; };
  while (!all_ended()) {
    lock.unlock();
    engine.help_run_graph();  // returns once the graph is idle: the device's chunk is in flight
    lock.lock();
    ended_.wait_for(lock, std::chrono::milliseconds(1), all_ended);
  }
  const auto tiles = tiles_;
  const std::string failure = first_failure_;
  lock.unlock();
  // The chunks' own requests report their failures (a body's exception, a kernel's error) here.
  for (const auto& t : tiles) c_.wait_tile(t);
  if (!failure.empty()) throw Error("parallel_for: " + failure);
  report_.seconds = seconds_since(t0);
  last_call_seconds_ = report_.seconds;
  report_.scheduler = scheduler_->name();
  log().debug("parallel_for over {}: cpu {} iterations in {} chunks, device {} in {}; {}", n,
              report_.sides[0].iterations, report_.sides[0].chunks, report_.sides[1].iterations,
              report_.sides[1].chunks, report_.scheduler);
  return report_;
}

}  // namespace hetflow::detail

namespace hetflow {

HeteroLoop::HeteroLoop(Controller& device, LoopBody body, LoopOptions options)
    : state_(std::make_unique<detail::LoopState>(device, std::move(body), std::move(options))) {}
HeteroLoop::~HeteroLoop() = default;
LoopReport HeteroLoop::operator()(std::size_t n) { return state_->run(n); }

}  // namespace hetflow
