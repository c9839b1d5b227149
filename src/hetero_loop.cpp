// The heterogeneous loop of include/hetflow/parallel_for.hpp (docs/parallel-for.md). Each side holds
// tokens: one per CPU worker, device_slots per device. A free token asks the scheduler for a chunk
// and submits it; its completion hook records the chunk's time and asks for the next. CPU chunks are
// completion hooks of the home controller (they run whatever the policy, never blocking); device
// chunks are the body's launches, a region D2H per write and a hook, each on its device's
// controller. The calling thread only waits for the end.
#include "hetero_loop.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>

#include "arena_park.hpp"
#include "dependency_tracker.hpp"  // intersection
#include "engine.hpp"
#include "log.hpp"
#include "loop_scheduler_spec.hpp"
#include "precise_sleeps.hpp"
#include "region_text.hpp"

namespace hetflow::detail {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
std::string range_text(Chunk c) { return "[" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")"; }
constexpr const char* kWritesThrew = "LoopBody::writes threw: ";
std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}
// A refusal because the controller was lost is a failure elsewhere (a kernel that faulted), unless
// the chunk's own kernel was that one.
bool lost(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const DeviceLost&) {
    return true;
  } catch (...) {
    return false;
  }
}
// Whether one of a chunk's own commands failed, rather than being cancelled for a failure elsewhere.
bool any_failed(const RequestList& commands) {
  return std::any_of(commands.begin(), commands.end(),
                     [](const RequestPtr& r) { return r->status.load(std::memory_order_acquire) == Status::failed; });
}
// What of a device chunk's writes comes back to the host images: the parts its launches wrote. Its
// writes may overlap other chunks' (the whole tile, say), and brought back whole they copied this
// device's image of the others' regions, never written there, over the results the others' chunks
// had put in the host images (a loop whose every chunk wrote out(y): thousands of elements wrong).
// `launched`: the out()/io() accesses of its launches (CommandsOf).
std::vector<Access> written_by_launches(const std::vector<Access>& writes, const std::vector<Access>& launched) {
  std::vector<Access> back;
  for (const auto& w : writes) {
    if (w.tile->device_only) continue;
    for (const auto& a : launched) {
      if (a.tile != w.tile) continue;
      const Box part = intersection(w.box, a.box);
      if (part.empty() ||
          std::any_of(back.begin(), back.end(), [&](const Access& b) { return b.tile == w.tile && b.box == part; }))
        continue;
      back.push_back(Access{w.tile, part, Role::in});
    }
  }
  return back;
}
// Why a chunk failed, where one of its own commands did: that command and the driver's reason. A
// hook is told only "request #2 'sq64' that it depends on failed", the words that a chunk cancelled
// by another's failure gets, where the chunk named should say that its own work failed.
std::string failure_of(const RequestList& commands, const std::string& otherwise) {
  for (const auto& r : commands)
    if (r->status.load(std::memory_order_acquire) == Status::failed) {
      std::lock_guard lock(r->m);
      return std::string("its ") + to_string(r->kind) + " '" + r->name + "' (request #" + std::to_string(r->id) +
             ") failed: " + r->error;
    }
  return otherwise;
}
// What a device chunk's hook waits for besides its writes: the device images its launches wrote.
// Every launch of its body is the chunk's, and one refused by the driver on a scratch tile outside
// its writes went unnoticed by the call (its failure came out of the next wait_all).
void add_launched_images(const std::vector<Access>& launched, std::vector<Access>& to) {
  for (const auto& a : launched) to.push_back(device_image(Access{a.tile, a.box, Role::in}));
}
// The launches (and transfers, given a list) submitted on this thread while it lives.
class CommandsOf {
 public:
  CommandsOf(RequestList* kernels, RequestList* transfers, std::vector<Access>* launch_writes = nullptr) {
    Engine::collect_commands(kernels, transfers, launch_writes);
  }
  ~CommandsOf() { Engine::collect_commands(nullptr, nullptr); }
  CommandsOf(const CommandsOf&) = delete;
  CommandsOf& operator=(const CommandsOf&) = delete;
};
// The completion hooks submitted on this thread while it lives.
class HooksOf {
 public:
  explicit HooksOf(RequestList* hooks) { Engine::collect_hooks(hooks); }
  ~HooksOf() { Engine::collect_hooks(nullptr); }
  HooksOf(const HooksOf&) = delete;
  HooksOf& operator=(const HooksOf&) = delete;
};

// A device chunk's time: from its kernels' profiling counters (first start to last end) where the
// queues profile, since completion notices can come a millisecond late (NVIDIA's callbacks, the
// poller's interval) and would swamp small chunks; else the host time from submission to the notice.
double device_seconds(const Engine& engine, const RequestList& kernels, double host_seconds) {
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

// The commands' own times added up, by profiling (0 where one is not profiled): a chunk launched in
// pieces sends each piece's results back while the next piece's kernels run, so first start to
// last end would count those kernels as transfer time.
double busy_seconds(const Engine& engine, const RequestList& commands) {
  double sum = 0;
  for (const auto& c : commands) {
    std::int64_t start = 0, end = 0;
    cl_event ev = c->event.load();
    if (!ev || !engine.device_times(ev, start, end)) return 0;
    sum += double(std::max<std::int64_t>(0, end - start)) * 1e-9;
  }
  return sum;
}

// What waiting for several tiles reported. Every tile is waited for even once one has thrown: the
// waits that a throw skipped left their tiles' failures unreported, and those cancelled every later
// call of the loop until a wait_all (a failed host task on an input before the first call).
struct TileWaits {
  std::vector<FailedRequest> failures;
  std::optional<std::string> lost;  // a wait found its controller lost: why (DeviceLost::reason)
  std::exception_ptr other;         // the first that is neither
  void wait(Controller& c, const std::shared_ptr<TileState>& tile) {
    try {
      engine_of(c).wait_tile(tile);
    } catch (const RequestFailed& f) {
      failures.insert(failures.end(), f.failures().begin(), f.failures().end());
    } catch (const DeviceLost& l) {
      failures.insert(failures.end(), l.failures().begin(), l.failures().end());
      if (!lost) lost = l.reason();
    } catch (...) {
      if (!other) other = std::current_exception();
    }
  }
  bool any() const { return lost || other || !failures.empty(); }
  // As Engine::wait_tile: a lost controller says so, with every failure the waits took.
  [[noreturn]] void throw_lost(std::vector<FailedRequest> all) { throw DeviceLost(*lost, std::move(all)); }
  void rethrow() {
    if (lost) throw_lost(std::move(failures));
    if (!failures.empty()) throw RequestFailed(std::move(failures));
    if (other) std::rethrow_exception(other);
  }
};

// CPU chunks at once: as asked (by default below), never more than the threads that
// run the home controller's graph less one. That one is the devices': their chunks' completions and
// next launches are graph tasks too, and with every thread in a CPU chunk they waited for the CPU to
// run out of chunks (seed 002's starved GPU token, its Fig. 47: on the H100 host, 16 CPU workers of
// 16 threads left the device 5 chunks of 64 where 15 left it 49, perf/bench_loop_tokens).
unsigned cpu_workers_for(unsigned asked, unsigned threads, std::size_t devices) {
  const unsigned most = threads > 1 ? threads - 1 : 1;
  if (asked > most)
    log().info(
        "parallel_for: {} CPU workers asked, {} run: one of the {} TBB threads stays free for the devices' steps",
        asked, most, threads);
  if (asked) return std::min(asked, most);
  // By default each further device leaves two more threads free: its driver's threads and its
  // notices need cores (two H100s, 32 threads: with 30 or 31 workers the GPUs' notices came in
  // ~4 ms steps, up to 23 ms late; with 29 or 27 mostly within 1 ms and none after 3 ms —
  // perf/RESULTS.md, 2026-11-25 21:42Z).
  const std::size_t further = devices > 1 ? 2 * (devices - 1) : 0;
  return most > further ? unsigned(most - further) : 1u;
}
}  // namespace

LoopState::LoopState(std::vector<Controller*> devices, LoopOptions options, std::uint32_t flow_node,
                     const SchedulerFactory& make_scheduler)
    : devices_((check_devices(devices), std::move(devices))),
      c_(*devices_[0]),
      options_(std::move(options)),
      cpu_workers_(cpu_workers_for(options_.cpu_workers, engine_of(c_).graph_threads(), devices_.size())),
      scheduler_(make_scheduler ? make_scheduler(cpu_workers_, unsigned(devices_.size()))
                                : make_loop_scheduler(options_.scheduler, cpu_workers_, unsigned(devices_.size()))),
      flow_node_(flow_node) {
  if (options_.device_slots == 0) throw UsageError("parallel_for: device_slots must be at least 1");
  views_.resize(devices_.size());
  constants_on_.assign(devices_.size(), 0);
  device_per_iteration_.assign(devices_.size(), 0.0);
  device_tail_price_.assign(devices_.size(), DeviceTailPrice{});
  for (std::size_t d = 1; d < devices_.size(); ++d)
    views_[d] = std::make_unique<DeviceView>(c_, *devices_[d], side_text(int(d)));
  // Devices of one model run equal work in equal time: what lets the scheduler tell a costly part
  // of the range from a slow device (RegionWork::same_speed).
  std::vector<unsigned> kinds(devices_.size());
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    kinds[d] = unsigned(d);
    for (std::size_t e = 0; e < d; ++e)
      if (devices_[e]->device().name == devices_[d]->device().name &&
          devices_[e]->device().platform_name == devices_[d]->device().platform_name) {
        kinds[d] = kinds[e];
        break;
      }
  }
  scheduler_->same_kind(kinds);
}

void LoopState::check_devices(const std::vector<Controller*>& devices) {
  if (devices.empty()) throw UsageError("parallel_for: the list of devices is empty (give at least one controller)");
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (!devices[d])
      throw UsageError("parallel_for: device " + std::to_string(d) + " of the list is a null controller");
    for (std::size_t e = 0; e < d; ++e)
      if (devices[e] == devices[d])
        throw UsageError("parallel_for: the controller of device '" + devices[d]->device().name +
                         "' is listed twice (" + std::to_string(e) + " and " + std::to_string(d) +
                         "); a controller is one device's queues: make a second Controller to use a device twice");
  }
  if (devices.size() > 1)
    for (std::size_t d = 0; d < devices.size(); ++d)
      if (devices[d]->policy() == Policy::sync)
        throw UsageError("parallel_for: device " + std::to_string(d) + " ('" + devices[d]->device().name +
                         "') is under the sync policy; a loop over several devices needs async on each, since under "
                         "sync the calling thread would serve one device at a time");
}

std::string LoopState::side_text(int side) const {
  if (side < 0) return "cpu";
  if (devices_.size() == 1) return "device";
  return "device " + std::to_string(side) + " (" + devices_[unsigned(side)]->device().name + ")";
}

void LoopState::check(const LoopBody& body) {
  if (!body.cpu && !body.device) throw UsageError("parallel_for: the loop body has neither a cpu nor a device part");
  if (!body.writes) throw UsageError("parallel_for: the loop body must say what a chunk writes (LoopBody::writes)");
  // A write among them made every CPU chunk wait for the one before (each wrote the whole tile).
  for (const auto* list : {&body.reads, &body.constants})
    for (const auto& a : *list)
      if (a.role != Role::in)
        throw UsageError(std::string("parallel_for: LoopBody::") + (list == &body.reads ? "reads" : "constants") +
                         " holds " + to_string(a.role) + "(tile '" + a.tile->name +
                         "'): every chunk only reads it, give in(" + a.tile->name +
                         ") (what a chunk writes goes in LoopBody::writes)");
}

void LoopState::set_body(LoopBody body) {
  check(body);
  const auto same_access = [](const Access& a, const Access& b) { return a.tile == b.tile && a.box == b.box; };
  const bool same_constants = std::equal(body.constants.begin(), body.constants.end(), body_.constants.begin(),
                                         body_.constants.end(), same_access);
  std::lock_guard lock(m_);
  body_ = std::move(body);
  if (!same_constants) constants_on_.assign(devices_.size(), 0);
}

void LoopState::constants_changed() {
  std::lock_guard lock(m_);
  constants_on_.assign(devices_.size(), 0);
}

void LoopState::move_constants_home() {
  {
    std::lock_guard lock(m_);
    if (constants_on_[0]) return;
  }
  for (const auto& k : body_.constants)
    if (!k.tile->device_only) c_.submit_transfer(true, Access{k.tile, k.box, Role::in});
  std::lock_guard lock(m_);
  constants_on_[0] = 1;
}

void LoopState::check_constants(std::size_t n) const {
  if (n == 0 || !body_.writes || (body_.constants.empty() && !body_.cpu)) return;
  std::vector<Access> writes;
  try {
    writes = body_.writes(Chunk{0, n});
  } catch (...) {
    return;  // the chunk that asks names it (chunk_writes)
  }
  // Regions, as hazards are: a constant row beside the rows the chunks write is no write of it.
  for (const auto& w : writes)
    for (const auto& k : body_.constants)
      if (w.tile == k.tile && w.box.overlaps(k.box))
        throw UsageError("parallel_for: tile '" + k.tile->name +
                         "' is in LoopBody::constants and among the chunks' writes: a constant no call changes "
                         "cannot be written (give it in LoopBody::reads)");
  // CPU chunks write the host images: a device-only tile among the writes was refused only once a
  // CPU chunk came, in the words of an internal hook, and not at all where the split gave the CPU none.
  if (body_.cpu)
    for (const auto& w : writes)
      if (w.tile->device_only)
        throw UsageError("parallel_for: tile '" + w.tile->name +
                         "' is among the chunks' writes (LoopBody::writes) but is device-only: CPU chunks write the "
                         "host images, and it has none (a device body's scratch needs no place among the writes; "
                         "leave the CPU body unset for a loop that runs on the device alone)");
}

void LoopState::check_host_reads() const {
  // Over several devices prepare_further_devices refuses every device-only read, CPU body or not.
  if (!body_.cpu || devices_.size() > 1) return;
  for (const auto* list : {&body_.reads, &body_.constants})
    for (const auto& a : *list)
      if (a.tile->device_only)
        throw UsageError("parallel_for: tile '" + a.tile->name +
                         "' is in LoopBody::" + (list == &body_.reads ? "reads" : "constants") +
                         " but is device-only: CPU chunks read the host images, and it has none (leave it out; "
                         "the device body's launches use it as it is)");
}

void LoopState::check_disjoint_writes(std::size_t n) const {
  if (devices_.size() < 2 || n < 2 || !body_.writes) return;
  const Chunk first{0, 1}, last{n - 1, n};
  std::vector<Access> at_first, at_last;
  try {
    at_first = body_.writes(first);
    at_last = body_.writes(last);
  } catch (...) {
    return;  // the chunk that asks names it (chunk_writes)
  }
  for (const auto& a : at_first)
    for (const auto& b : at_last)
      if (a.tile == b.tile && a.box.overlaps(b.box))
        throw UsageError("parallel_for over " + std::to_string(devices_.size()) + " devices: the writes of chunk " +
                         range_text(first) + " and of chunk " + range_text(last) + " overlap on tile '" + a.tile->name +
                         "' (LoopBody::writes): over several devices chunks must write disjoint "
                         "regions, since one device's transfers back are not ordered with another's writes (give each "
                         "chunk its own region, e.g. out(t.region(span_of(chunk))), or run the loop on one device)");
}

bool LoopState::take(int side, Chunk& chunk, std::size_t* piece) {
  const bool cpu = side < 0;
  if (piece) *piece = 0;
  const auto given =
      std::find_if(given_back_.rbegin(), given_back_.rend(), [&](const GivenTail& g) { return int(g.device) == side; });
  if (!cpu && given != given_back_.rend() && !stopping_) {  // a CPU chunk's tail, whole
    chunk = given->tail;
    given_back_.erase(std::next(given).base());
    tails_taken_.insert(chunk.begin);
    log().debug("parallel_for: {} takes over a cpu chunk's tail {}", side_text(side), range_text(chunk));
    ++in_flight_;
    return true;
  }
  if (!cpu && tail_tokens_[std::size_t(side)] > 0) {  // one added for a tail, none left for it: it stops
    --tail_tokens_[std::size_t(side)];
    note_tail_takers();
    drop_token(side);
    return false;
  }
  const std::size_t remaining = n_ - next_;
  std::size_t size = 0;
  if (!stopping_ && remaining > 0)
    size = cpu ? scheduler_->cpu_chunk(remaining, seconds_since(started_))
               : scheduler_->device_chunk(unsigned(side), remaining, seconds_since(started_), piece);
  // The last token left takes whatever the scheduler handed to nobody: every iteration runs.
  if (size == 0 && tokens_ == 1 && !stopping_) size = remaining;
  if (size == 0) {
    // Nothing left, or the scheduler gives this device nothing more: it may still run a CPU
    // chunk's tail far sooner than the CPU (yield_tail), so it waits while CPU chunks run.
    if (!cpu && !stopping_ && may_park_ && cpu_in_flight_ > 0 && device_per_iteration_[std::size_t(side)] > 0) {
      log().debug("parallel_for: {} waits for a cpu chunk's tail", side_text(side));
      parked_.push_back(unsigned(side));
      note_tail_takers();
      return false;
    }
    log().debug("parallel_for: a {} token stops, {} iterations left", side_text(side), remaining);
    drop_token(side);
    return false;
  }
  chunk = Chunk{next_, next_ + size};
  if (cpu) ++cpu_in_flight_;
  if (piece && *piece > 0)
    log().debug("parallel_for: {} chunk {} of {} left, in pieces of {}", side_text(side), range_text(chunk), remaining,
                *piece);
  else
    log().debug("parallel_for: {} chunk {} of {} left", side_text(side), range_text(chunk), remaining);
  next_ += size;
  ++in_flight_;
  return true;
}

void LoopState::note_chunk_ends(unsigned device, Chunk chunk, const RequestList& kernels,
                                const RequestList& transfers) {
  std::lock_guard lock(m_);
  chunk_ends_.push_back(ChunkEnds{device, chunk.begin, kernels, transfers, {}});
  if (devices_alone()) end_wake_ = {};  // a parked calling thread watches it instead (run_to_end)
}

void LoopState::note_chunk_hooks(unsigned device, Chunk chunk, RequestList hooks) {
  std::lock_guard lock(m_);
  for (auto& e : chunk_ends_)
    if (e.device == device && e.begin == chunk.begin) e.hooks = std::move(hooks);
}

void LoopState::run_ready_device_hooks() {
  std::vector<std::pair<unsigned, RequestPtr>> ready;
  {
    std::lock_guard lock(m_);
    for (const auto& e : chunk_ends_)
      for (const auto& h : e.hooks)
        if (h->ready_to_run.load() && !h->claimed.load()) ready.emplace_back(e.device, h);
  }
  for (const auto& [d, h] : ready) engine_of(*devices_[d]).run_if_ready(h);
}

bool LoopState::devices_alone() const {
  // Until then the calling thread is the one kept free to run the devices' completions and launch
  // their next chunks while every worker may be in a CPU chunk.
  return cpu_tokens_ == 0 || next_ >= n_ || stopping_;
}

std::optional<std::pair<unsigned, RequestPtr>> LoopState::command_to_watch() const {
  if (!devices_alone()) return std::nullopt;
  // While chunks are left to hand out, a device's token goes on at its kernels' end; after that
  // only the transfers back stand between the call and its end.
  const bool more = next_ < n_ && !stopping_;
  for (const auto& e : chunk_ends_)
    for (const auto& r : more || e.transfers.empty() ? e.kernels : e.transfers)
      if (!r->ended() && r->event.load()) return std::pair{e.device, r};
  return std::nullopt;
}

void LoopState::note_tiles(unsigned device, const std::vector<Access>& accesses) {
  for (const auto& a : accesses) tiles_[device].insert(a.tile);
}

void LoopState::note_launched(unsigned device, const std::vector<Access>& launched) {
  std::lock_guard lock(m_);
  note_tiles(device, launched);
}

LoopState::Unwritable LoopState::chunk_writes(Chunk chunk, std::vector<Access>& to) const {
  std::vector<Access> writes;
  try {
    writes = body_.writes(chunk);
  } catch (...) {
    return {std::current_exception(), kWritesThrew};
  }
  // Said here, of the chunk: an in() write was never brought back from the device (its results
  // lost without a word), and a region past its tile was refused as an internal hook's.
  for (const auto& w : writes) {
    std::string wrong = w.role == Role::in ? "in(tile '" + w.tile->name +
                                                 "'), but a chunk's writes are out() or io() (what every chunk only "
                                                 "reads goes in LoopBody::reads)"
                                           : out_of_bounds(w);
    if (!wrong.empty())
      return {std::make_exception_ptr(UsageError("LoopBody::writes for chunk " + range_text(chunk) + " gave " +
                                                 (w.role == Role::in ? wrong : "a region outside its tile: " + wrong))),
              ""};
  }
  for (auto& w : writes) to.push_back(std::move(w));
  return {};
}

void LoopState::chunk_ended(int side_index, Chunk chunk, double seconds, const std::string& failure, double round_trip,
                            std::exception_ptr refusal, bool own) {
  if (failure.empty()) chunk_measured(side_index, chunk, seconds, round_trip);
  chunk_back(side_index, chunk, seconds, failure, std::move(refusal), own);
}

void LoopState::chunk_measured(int side_index, Chunk chunk, double seconds, double round_trip) {
  const bool cpu = side_index < 0;
  // What the scheduler is told, as it is told it (the call's clock: when the notice came).
  if (log().should_log(spdlog::level::debug))
    log().debug("parallel_for: {} chunk {} ended at {:.3f} ms: {:.3f} ms{}", side_text(side_index), range_text(chunk),
                seconds_since(started_) * 1e3, seconds * 1e3,
                cpu ? std::string() : fmt::format(", round trip {:.3f} ms", round_trip * 1e3));
  if (cpu) {
    scheduler_->record_cpu(chunk.begin, chunk.size(), seconds);
  } else if (!is_tail(side_index, chunk)) {
    scheduler_->record_device(unsigned(side_index), chunk.begin, chunk.size(), seconds, round_trip);
  }
  std::lock_guard lock(m_);
  if (!cpu && seconds > 0 && chunk.size() > 0) {
    device_per_iteration_[std::size_t(side_index)] = seconds / double(chunk.size());
    device_tail_price_[std::size_t(side_index)].record(chunk.size(), seconds, round_trip);
  }
  if (!cpu) ended_.notify_all();  // a calling thread watching the chunk's kernels (run_to_end)
}

void LoopState::note_failure(int side_index, Chunk chunk, const std::string& failure, std::exception_ptr refusal,
                             bool own) {
  // In place (a CPU chunk reading what a device chunk writes back), the chunk that waited on a
  // failed kernel's transfer could be told first, and the device chunk whose kernel failed was
  // never named: the chunk whose own work failed is the one to name.
  if (first_failure_.empty() || (own && !failed_own_)) {
    failed_chunk_ = side_text(side_index) + " chunk " + range_text(chunk);
    cause_ = failure;
    refusal_ = std::move(refusal);
    failed_own_ = own;
    first_failure_ = failed_chunk_ + ": " + cause_;
  }
  stopping_ = true;
}

void LoopState::chunk_failed(int side_index, Chunk chunk, const std::string& failure, std::exception_ptr refusal,
                             bool own) {
  std::lock_guard lock(m_);
  note_failure(side_index, chunk, failure, std::move(refusal), own);
}

void LoopState::drop_token(int side_index) {
  --tokens_;
  if (side_index < 0 && --cpu_tokens_ == 0 && !chunk_ends_.empty()) end_wake_ = {};  // run_to_end may watch now
}

void LoopState::refused(int side_index, Chunk chunk, std::exception_ptr why, const char* by, bool kernel_failed) {
  chunk_ended(side_index, chunk, 0, "was refused: " + std::string(by) + what_of(why), 0, why,
              !lost(why) || kernel_failed);
  std::unique_lock lock(m_);
  drop_token(side_index);
  notify_if_ended(lock);
}

void LoopState::chunk_back(int side_index, Chunk chunk, double seconds, const std::string& failure,
                           std::exception_ptr refusal, bool own) {
  const bool cpu = side_index < 0;
  std::unique_lock lock(m_);
  if (!cpu) {
    std::erase_if(chunk_ends_,
                  [&](const ChunkEnds& e) { return e.device == unsigned(side_index) && e.begin == chunk.begin; });
    if (tails_taken_.erase(chunk.begin) > 0) {
      --tails_running_[std::size_t(side_index)];
      note_tail_takers();
    }
  }
  auto& side = report_.sides[std::size_t(side_index + 1)];
  side.iterations += chunk.size();
  side.chunks += 1;
  side.busy_seconds += seconds;
  if (!failure.empty()) note_failure(side_index, chunk, failure, std::move(refusal), own);
  --in_flight_;
  // The parked device tokens decide again once no CPU chunk can give them a tail: they take what
  // is left to hand out, or stop (a token never waits for a tail that cannot come).
  std::vector<unsigned> wake;
  if (cpu && (--cpu_in_flight_ == 0 || stopping_)) {
    wake.swap(parked_);
    note_tail_takers();
  }
  if (!cpu) ended_.notify_all();  // a calling thread watching the chunk's transfers back (run_to_end)
  notify_if_ended(lock);
  if (lock.owns_lock()) lock.unlock();
  for (const unsigned d : wake) next_device(d);
}

bool LoopState::tail_takers() const {
  if (stopping_ || cpu_in_flight_ == 0) return false;
  if (!parked_.empty()) return true;
  for (std::size_t d = 0; d < devices_.size(); ++d)
    if (tails_running_[d] > 0 && tails_running_[d] < kMostTailsInFlight) return true;
  return false;
}

void LoopState::note_tail_takers() { device_waiting_.store(tail_takers(), std::memory_order_relaxed); }

bool LoopState::is_tail(int side_index, Chunk chunk) {
  std::lock_guard lock(m_);
  return side_index >= 0 && tails_taken_.count(chunk.begin) > 0;
}

void LoopState::notify_if_ended(std::unique_lock<std::mutex>& lock) {
  if (in_flight_ != 0 || tokens_ != 0) return;
  if (graph_held_) {  // the waiting thread leaves the graph's tasks (run_to_end)
    graph_held_ = false;
    engine_of(c_).release_graph();
  }
  end_wake_ = {};  // the parked calling thread returns (run_to_end)
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
  Unwritable unwritable;
  {
    std::unique_lock lock(m_);
    if (!take(-1, chunk)) {
      notify_if_ended(lock);
      return;
    }
    roles = body_.reads;  // constants too: a CPU chunk reads their host images after any earlier writer
    roles.insert(roles.end(), body_.constants.begin(), body_.constants.end());
    unwritable = chunk_writes(chunk, roles);
    note_tiles(0, roles);
  }
  if (unwritable) return refused(-1, chunk, unwritable.why, unwritable.by);
  const std::string name = "cpu chunk " + range_text(chunk);
  Engine::FlowNodeScope made_by(flow_node_);
  try {
    std::lock_guard in_order(submitting_);
    c_.submit_hook(
        name,
        [this, chunk](const Outcome& o) {
          if (!o.ok()) {  // it waited on a request that failed: not its own work
            chunk_ended(-1, chunk, 0, o.error, 0, nullptr, false);
            next_cpu();  // drops the token: the loop is stopping
            return;
          }
          const auto t0 = std::chrono::steady_clock::now();
          std::exception_ptr thrown;
          std::string failure;
          std::vector<unsigned> wake;
          Chunk ran = chunk;  // less its tail, where a device took that over
          try {
            ran.end = run_cpu_pieces(chunk, wake);
          } catch (const std::exception& e) {
            thrown = std::current_exception();
            failure = std::string("threw: ") + e.what();
          } catch (...) {
            thrown = std::current_exception();
            failure = "threw an exception that is not a std::exception";
          }
          if (thrown) ran = chunk;                                      // the chunk failed, whole
          chunk_ended(-1, ran, seconds_since(t0), failure, 0, thrown);  // failures() gives what it threw
          for (const unsigned d : wake) next_device(d);                 // the tail, on the device that waited
          next_cpu();                                                   // the next chunk, or the token's end
          if (thrown) std::rethrow_exception(thrown);                   // the hook's request fails: a wait names it
        },
        std::move(roles));
  } catch (...) {
    refused(-1, chunk, std::current_exception());
  }
}

std::size_t LoopState::run_cpu_pieces(Chunk chunk, std::vector<unsigned>& wake) {
  constexpr double kPieceSeconds = 0.5e-3;  // a piece faster than this doubles the next
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t at = chunk.begin, step = std::max<std::size_t>(1, chunk.size() / 64);
  while (at < chunk.end) {
    const auto p0 = std::chrono::steady_clock::now();
    const Chunk part{at, at + std::min(step, chunk.end - at)};  // no sum past SIZE_MAX
    body_.cpu(part);
    at = part.end;
    // A device chunk's hook made ready from outside the arena (the completion poller, a driver's
    // callback) waits for a TBB thread, and while every one runs a CPU chunk it waited up to a
    // whole chunk (N-body's first call on one H200: 0.4-7.3 ms, the device idle meanwhile;
    // perf/RESULTS.md 2026-11-29). Between pieces, this thread runs it instead.
    run_ready_device_hooks();
    if (at < chunk.end && device_waiting_.load(std::memory_order_relaxed) &&
        yield_tail(chunk, at, seconds_since(t0), wake))
      break;
    if (seconds_since(p0) < kPieceSeconds) step = step > chunk.size() / 2 ? chunk.size() : 2 * step;
  }
  return at;
}

bool LoopState::yield_tail(Chunk chunk, std::size_t stopped_at, double seconds, std::vector<unsigned>& wake) {
  // The CPU's time for the tail at its rate on this chunk so far, against the fastest device's that
  // would take it: a parked one, or one running tails already, whose queue runs this one after
  // them (DeviceTailPrice: its largest chunk's kernel rate, no less than its least kernel time,
  // plus what its latest chunk took beside its kernels; 200 us at least, for the transfer back;
  // times one more for each tail ahead). Given only where the CPU would still take 2 ms or more and
  // the device under half of that: the rates are of other iterations, and on one H200 tails given
  // for less slowed the first calls of Barnes-Hut and SpMV by 15-19 % (perf/RESULTS.md, 2026-11-28 21:21Z).
  constexpr double kLeastBeside = 200e-6, kLeastCpuLeft = 2e-3;
  std::lock_guard lock(m_);
  if (!tail_takers()) return false;
  const std::size_t tail = chunk.end - stopped_at;
  const double cpu_left = seconds / double(stopped_at - chunk.begin) * double(tail);
  if (cpu_left < kLeastCpuLeft) return false;
  const auto device_time = [&](unsigned d) {
    return device_tail_price_[d].seconds(tail, kLeastBeside) * double(1 + tails_running_[d]);
  };
  const auto room = [&](unsigned d) {
    return tails_running_[d] < kMostTailsInFlight &&
           (tails_running_[d] > 0 || std::find(parked_.begin(), parked_.end(), d) != parked_.end());
  };
  std::optional<unsigned> fastest;
  for (unsigned d = 0; d < unsigned(devices_.size()); ++d)
    if (room(d) && device_tail_price_[d].known() && (!fastest || device_time(d) < device_time(*fastest))) fastest = d;
  if (!fastest || device_time(*fastest) > 0.5 * cpu_left) return false;
  const unsigned d = *fastest;
  const auto parked = std::find(parked_.begin(), parked_.end(), d);
  log().debug("parallel_for: cpu chunk {} gives its tail {} to {} (cpu {:.3f} ms left{})", range_text(chunk),
              range_text(Chunk{stopped_at, chunk.end}), side_text(int(d)), cpu_left * 1e3,
              parked == parked_.end() ? fmt::format(", {} tails ahead", tails_running_[d]) : std::string());
  // Counted as the device's from now, not from when its token takes it: CPU chunks that reach a
  // piece's end together would each find the device neither parked nor running a tail, and keep theirs.
  given_back_.push_back(GivenTail{d, Chunk{stopped_at, chunk.end}});
  ++tails_running_[d];
  wake.push_back(d);
  if (parked != parked_.end()) {
    parked_.erase(parked);
  } else {  // a token more for it, until it finds nothing to take (LoopState::take)
    ++tail_tokens_[d];
    ++tokens_;
  }
  note_tail_takers();
  return true;
}

bool LoopState::read_before_device_chunk(const Access& w) const {
  // An io() write is read first: its region goes over with the chunk, unless the call's reads
  // already moved it (tester 8: an in-place loop with no reads computed every device iteration on
  // a stale device image, silently).
  if (w.role != Role::io || w.tile->device_only) return false;
  for (const auto& r : body_.reads)
    if (r.tile == w.tile && r.box.contains(w.box)) return false;
  return true;
}

void LoopState::next_device(unsigned d) {
  Chunk chunk;
  std::size_t piece = 0;
  std::vector<Access> writes;
  double per_iteration = 0;
  Unwritable unwritable;
  {
    std::unique_lock lock(m_);
    if (!take(int(d), chunk, &piece)) {
      notify_if_ended(lock);
      return;
    }
    unwritable = chunk_writes(chunk, writes);
    per_iteration = device_per_iteration_[d];
  }
  if (unwritable) return refused(int(d), chunk, unwritable.why, unwritable.by);
  Controller& ctl = *devices_[d];
  DeviceView* view = views_[d].get();
  // The loop's node is the home controller's: another controller's record has no such node.
  std::optional<Engine::FlowNodeScope> made_by;
  if (!view) made_by.emplace(flow_node_);
  const auto t0 = std::chrono::steady_clock::now();
  auto kernels = std::make_shared<RequestList>();
  std::vector<Access> launched;     // what its launches write
  bool kernels_hooked = false;      // its kernels' hook is submitted: it carries the token on
  std::function<void()> back_half;  // while the hook on its transfers back is being submitted
  try {
    std::lock_guard in_order(submitting_);
    Engine::DeferredBlocking never_blocks(engine_of(ctl));  // under sync, what it defers its hooks wait for
    std::vector<bool> read_first(writes.size());            // judged on the home tiles, before translation
    for (std::size_t i = 0; i < writes.size(); ++i) read_first[i] = read_before_device_chunk(writes[i]);
    // Before the body runs: its launches may use only tiles the device already has (DeviceView).
    if (view)
      for (auto& w : writes) w = view->own(w);
    std::vector<Access> reads;  // the device's first chunk: the reads nothing writes (prepare_further_devices)
    {
      std::lock_guard lock(m_);
      note_tiles(d, writes);
      reads.swap(first_chunk_reads_[d]);
      note_tiles(d, reads);
    }
    for (const auto& r : reads) ctl.submit_transfer(true, r);
    for (std::size_t i = 0; i < writes.size(); ++i)
      if (read_first[i]) ctl.submit_transfer(true, Access{writes[i].tile, writes[i].box, Role::in});
    if (!reads.empty()) {
      std::lock_guard lock(m_);
      constants_on_[d] = 1;  // any pending ones were among them
    }
    std::vector<Access> back;
    for (const auto& w : writes)  // no host image: the hook waits for the device image
      if (w.tile->device_only) back.push_back(device_image(Access{w.tile, w.box, Role::in}));
    RequestList transfers_back;
    // The body once per piece (the scheduler's, else the chunk whole), each piece's results sent
    // back as soon as its launches are in: its transfer back runs while the next piece's kernels do.
    for (std::size_t begin = chunk.begin; begin < chunk.end;) {
      const Chunk part{begin, piece > 0 ? std::min(chunk.end, begin + piece) : chunk.end};
      begin = part.end;
      const std::size_t launched_before = launched.size();
      {
        const std::size_t before = kernels->size();
        CommandsOf collecting(kernels.get(), nullptr, &launched);
        std::optional<DeviceView::Scope> translating;
        if (view) translating.emplace(*view);
        body_.device(ctl, part);
        // Nothing of it on this device (a body that launched on a controller it captured, not one
        // it was given): the transfers back would bring this device's stale images over the results.
        if (translating && translating->launches() == 0)
          throw UsageError("parallel_for on " + view->side() + ": the device body submitted no launch on the " +
                           "Controller& it was given for chunk " + range_text(part) +
                           "; launch there (the controller of " + view->side() +
                           "), with the home kernels and tiles, not on a controller it captured");
        if (!view && kernels->size() == before) refuse_no_launch(part);
      }
      const std::vector<Access> launched_by_part(launched.begin() + std::ptrdiff_t(launched_before), launched.end());
      CommandsOf collecting(nullptr, &transfers_back);
      for (const auto& w : written_by_launches(writes, launched_by_part)) {
        ctl.submit_transfer(false, w);
        back.push_back(w);
      }
    }
    note_launched(d, launched);
    note_chunk_ends(d, chunk, *kernels, transfers_back);
    const std::string name = (view ? view->side() + " chunk " : std::string("device chunk ")) + range_text(chunk);
    // The hook on the kernels waits for every launch of the body, not only for those writing what
    // it names: a kernel on in() tiles alone still ran when its chunk, and the call, had ended.
    std::optional<Engine::HooksAfter> after_every_launch(std::in_place, *kernels);
    RequestList hooks;  // run by a CPU chunk between its pieces, should no TBB thread come first
    std::optional<HooksOf> collecting_hooks(std::in_place, &hooks);
    if (transfers_back.empty()) {  // nothing to bring back (every write device-only): the kernels end the chunk
      add_launched_images(launched, back);
      ctl.submit_hook(
          name,
          [this, d, chunk, t0, kernels](const Outcome& o) {
            const double round_trip = seconds_since(t0);
            const double seconds = device_seconds(engine_of(*devices_[d]), *kernels, round_trip);
            const bool own = any_failed(*kernels);
            const std::string failure = o.ok() ? std::string() : failure_of(*kernels, o.error);
            kernels->clear();  // their events and arguments go now, not with the hook
            chunk_ended(int(d), chunk, seconds, failure, round_trip, nullptr, own);
            next_device(d);
          },
          std::move(back));
    } else {
      // The device's token goes on when the chunk's kernels end, so the next chunk's kernels run
      // while this one's results come back (with one chunk in flight they waited for that transfer;
      // Mandelbrot 8192² on one H100 took 12.4 ms a call with two in flight, 14.9 with one). The
      // chunk ends, for the call, when they are back.
      // The two hooks may run in either order (both wait for the kernels): whichever ends second
      // ends the chunk for the call, with the kernels' time and the transfers' outcome.
      struct Halves {
        std::atomic<int> left{2};
        double seconds = 0, back_seconds = 0;  // written before the decrement, read after it
        std::string failure;                   // of the transfers back
        bool own = false;                      // a transfer back failed, not cancelled
      };
      auto halves = std::make_shared<Halves>();
      auto half_done = [this, d, chunk, halves] {
        if (halves->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        if (halves->failure.empty() && !is_tail(int(d), chunk))
          scheduler_->record_transfer_back(d, chunk.size(), halves->back_seconds);
        chunk_back(int(d), chunk, halves->seconds, halves->failure, nullptr, halves->own);
      };
      std::vector<Access> computed;
      for (const auto& w : writes) computed.push_back(device_image(Access{w.tile, w.box, Role::in}));
      add_launched_images(launched, computed);
      ctl.submit_hook(
          name + " kernels",
          [this, d, chunk, t0, kernels, halves, half_done](const Outcome& o) {
            const double round_trip = seconds_since(t0);
            halves->seconds = device_seconds(engine_of(*devices_[d]), *kernels, round_trip);
            const bool own = any_failed(*kernels);
            const std::string failure = o.ok() ? std::string() : failure_of(*kernels, o.error);
            kernels->clear();
            if (o.ok())
              chunk_measured(int(d), chunk, halves->seconds, round_trip);
            else
              chunk_failed(int(d), chunk, failure, nullptr, own);
            next_device(d);
            half_done();
          },
          std::move(computed));
      after_every_launch.reset();  // the hook on the transfers back waits for them alone
      kernels_hooked = true;
      auto transfers = std::make_shared<RequestList>(transfers_back);
      back_half = half_done;
      ctl.submit_hook(
          name,
          [this, d, transfers, halves, half_done](const Outcome& o) {
            // How long its results took to come back, by profiling (0: not profiled).
            halves->back_seconds = busy_seconds(engine_of(*devices_[d]), *transfers);
            halves->own = any_failed(*transfers);
            if (!o.ok()) halves->failure = failure_of(*transfers, o.error);
            transfers->clear();
            half_done();
          },
          std::move(back));
      back_half = nullptr;
    }
    collecting_hooks.reset();
    note_chunk_hooks(d, chunk, std::move(hooks));
    // Its kernels should end about then, at the rate of its chunk before (the transfer back after
    // them is not counted: an early check costs one status query, a late notice idles the device).
    if (per_iteration > 0)
      engine_of(ctl).expect_end(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                         std::chrono::duration<double>(per_iteration * double(chunk.size()))));
  } catch (...) {
    note_launched(d, launched);
    if (kernels_hooked) {
      // The kernels' hook goes on with the token; the chunk ends here, refused, as its other half.
      // `kernels` is the hook's now (it clears them): whether one of them failed, it says itself.
      const auto why = std::current_exception();
      chunk_failed(int(d), chunk, "was refused: " + what_of(why), why, !lost(why));
      if (back_half) back_half();
      return;
    }
    refused(int(d), chunk, std::current_exception(), "", any_failed(*kernels));
  }
}

void LoopState::refuse_no_launch(Chunk chunk) const {
  // Its results would be neither computed nor brought back: the call would end as if they were.
  throw UsageError("parallel_for: the device body submitted no launch for device chunk " + range_text(chunk) +
                   "; a device chunk must launch its work on the Controller& it is given (LoopBody::device)");
}

void LoopState::device_chunk_synchronously(Chunk chunk) {
  // The calling thread is the token: a refused chunk stops the hand-out, and its next take stops it.
  std::vector<Access> writes;
  if (auto unwritable = chunk_writes(chunk, writes))
    return chunk_ended(0, chunk, 0, "was refused: " + std::string(unwritable.by) + what_of(unwritable.why), 0,
                       unwritable.why);
  {
    std::lock_guard lock(m_);
    note_tiles(0, writes);
  }
  const auto t0 = std::chrono::steady_clock::now();
  RequestList kernels, transfers;
  std::vector<Access> launched;  // what its launches write
  std::exception_ptr refusal;
  try {
    // Submitted together (submitting_) and without blocking under it, then waited for outside it:
    // a blocked transfer over may wait for a CPU chunk whose hook ends by submitting the next one.
    std::lock_guard in_order(submitting_);
    Engine::DeferredBlocking never_blocks(engine_of(c_));
    for (const auto& w : writes)
      if (read_before_device_chunk(w)) c_.submit_transfer(true, Access{w.tile, w.box, Role::in});
    {
      CommandsOf collecting(&kernels, nullptr, &launched);
      body_.device(c_, chunk);
      if (kernels.empty()) refuse_no_launch(chunk);
    }
    CommandsOf collecting(nullptr, &transfers);
    for (const auto& w : written_by_launches(writes, launched)) c_.submit_transfer(false, w);
  } catch (...) {
    refusal = std::current_exception();
  }
  note_launched(0, launched);
  std::string failure;
  bool own = true;
  if (refusal) {
    failure = "was refused: " + what_of(refusal);
    own = !lost(refusal) || any_failed(kernels);
  } else {
    // A blocking request leaves its failure to a wait, so the chunk reads its commands' outcome, as
    // the async chunk's hooks are told it. Kernels writing no tile that comes back have no transfer
    // back to have waited for them, and one the streaming step has yet to enqueue has no event to
    // block on: the chunk waits for every launch itself.
    engine_of(c_).wait_for_launches(kernels);
    engine_of(c_).wait_for(transfers, "sync(transfers back)");  // as blocking ones would have (sync)
    for (const auto* commands : {&kernels, &transfers})
      for (const auto& r : *commands) {
        const Status status = r->ended() ? r->status.load(std::memory_order_acquire) : Status::done;
        if (failure.empty() && status != Status::done)
          failure = status == Status::failed ? failure_of({r}, "") : dependency_cause(*r, status);
      }
    own = any_failed(kernels) || any_failed(transfers);
  }
  const double round_trip = seconds_since(t0);
  chunk_ended(0, chunk, device_seconds(engine_of(c_), kernels, round_trip), failure, round_trip, refusal, own);
}

void LoopState::begin(std::size_t n) {
  auto& engine = engine_of(c_);
  Engine::FlowNodeScope made_by(flow_node_);
  check_constants(n);
  check_host_reads();
  check_disjoint_writes(n);
  started_ = std::chrono::steady_clock::now();
  scheduler_->restart(n, last_call_seconds_, bool(body_.cpu), bool(body_.device));
  {
    std::lock_guard lock(m_);
    n_ = n;
    next_ = 0;
    in_flight_ = 0;
    stopping_ = false;
    first_failure_.clear();
    failed_own_ = false;
    failed_chunk_.clear();
    cause_.clear();
    refusal_ = nullptr;
    chunk_ends_.clear();
    given_back_.clear();
    parked_.clear();
    tails_taken_.clear();
    tails_running_.assign(devices_.size(), 0);
    tail_tokens_.assign(devices_.size(), 0);
    cpu_in_flight_ = 0;
    device_waiting_.store(false, std::memory_order_relaxed);
    may_park_ = engine.policy == Policy::async && !scheduler_->fixed_shares();
    tiles_.assign(devices_.size(), {});
    first_chunk_reads_.assign(devices_.size(), {});
    report_ = LoopReport{};
    report_.sides = {LoopReport::Side{"cpu"}};
    report_.cpu_workers = body_.cpu ? cpu_workers_ : 0;
    for (Controller* d : devices_) report_.sides.push_back(LoopReport::Side{d->device().name});
    note_tiles(0, body_.reads);
    note_tiles(0, body_.constants);
    // Under sync the calling thread is the device's one token (LoopState::device_chunk_synchronously);
    // several devices are all async (check_devices).
    const unsigned device_tokens = !body_.device                   ? 0
                                   : engine.policy == Policy::sync ? 1
                                                                   : device_slots_ * unsigned(devices_.size());
    // The tokens are counted before any is handed out, so no chunk can see the call ended early.
    cpu_tokens_ = n == 0 || !body_.cpu ? 0 : cpu_workers_;
    tokens_ = n == 0 ? 0 : cpu_tokens_ + device_tokens;
  }
  if (n == 0) return;
  if (body_.device && devices_.size() > 1)
    prepare_further_devices(n);
  else if (body_.device) {
    for (const auto& r : body_.reads)
      if (!r.tile->device_only) c_.submit_transfer(true, Access{r.tile, r.box, Role::in});
    move_constants_home();
  }
  const auto start_cpu_workers = [this] {
    if (body_.cpu)
      for (unsigned i = 0; i < cpu_workers_; ++i) next_cpu();
  };
  if (!body_.device) {
    start_cpu_workers();
    return;
  }
  if (engine.policy == Policy::sync) {
    // Under sync every transfer blocks, which a hook may not do: the calling thread is the
    // device's token. Its first chunk is taken before the CPU workers start, as under async below:
    // started first, a CPU chunk that waited on a failed input could stop the call before the
    // device had any, and the chunk whose own work failed was then never run, nor named
    // (test_parallel_for, "the chunk whose own work failed is named first…": once in ~150 runs on
    // two cores under load, and every run with the calling thread held 5 ms between the two).
    Chunk chunk;
    bool taken = false;
    {
      std::lock_guard lock(m_);
      taken = take(0, chunk);
    }
    start_cpu_workers();
    while (taken) {
      device_chunk_synchronously(chunk);
      std::lock_guard lock(m_);
      taken = take(0, chunk);
    }
    std::unique_lock lock(m_);
    notify_if_ended(lock);  // the device's token dropped: the call ends here if it was the last
    return;
  }
  // The devices' first chunks go out before the CPU's: handing 15 CPU workers their chunks took
  // 0.2 ms on the H100 host, a sixth of a 1.2 ms N-body call the device waited out (perf/RESULTS.md).
  // Slot by slot, so that each device's first chunk is out before any device's second.
  for (unsigned i = 0; i < device_slots_; ++i)
    for (unsigned d = 0; d < devices_.size(); ++d) next_device(d);
  start_cpu_workers();
}

void LoopState::prepare_further_devices(std::size_t n) {
  // The home controller's hazards do not order another controller's transfers, which read and
  // write the same host images: its earlier requests on the loop's tiles end first.
  std::vector<Access> touched = body_.reads;
  touched.insert(touched.end(), body_.constants.begin(), body_.constants.end());
  const std::vector<Access> written = body_.writes(Chunk{0, n});
  for (const auto& w : written) touched.push_back(w);
  std::set<TileState*> waited;
  TileWaits earlier;
  for (const auto& a : touched)
    if (waited.insert(a.tile.get()).second) earlier.wait(c_, a.tile);
  earlier.rethrow();
  std::set<TileState*> written_tiles;
  for (const auto& w : written) written_tiles.insert(w.tile.get());
  // A read the loop also writes (an io tile) goes to every device before any chunk writes a host
  // image back: one device's write-back over a region another device is still moving would race,
  // and no controller's hazards see the other's requests. So those moves are waited for. A read
  // nothing writes goes to the home device at once, as with one device, and to a further device
  // only with its first chunk (next_device): Barnes-Hut's 70 MB of bodies held a loop over the
  // H100 and PoCL until PoCL had copied them, and a device the scheduler gives nothing needs none.
  std::vector<std::pair<Controller*, std::shared_ptr<TileState>>> moved;
  move_constants_home();
  std::unique_lock lock(m_);
  for (std::size_t d = 1; d < devices_.size(); ++d)
    for (const auto& k : body_.constants) {
      if (k.tile->device_only)
        throw UsageError("parallel_for over several devices: tile '" + k.tile->name +
                         "' is in LoopBody::constants but is device-only: its contents are on the first device alone");
      // Like a read nothing writes: with the device's first chunk, only until it has them.
      if (!constants_on_[d]) first_chunk_reads_[d].push_back(Access{views_[d]->own(k).tile, k.box, Role::in});
    }
  for (std::size_t d = 0; d < devices_.size(); ++d)
    for (const auto& r : body_.reads) {
      if (r.tile->device_only) {
        if (d == 0) continue;  // as with one device: already there
        throw UsageError("parallel_for over several devices: tile '" + r.tile->name +
                         "' is in LoopBody::reads but is device-only: its contents are on the first device alone");
      }
      const Access mine = d == 0 ? r : views_[d]->own(r);
      const bool also_written = written_tiles.count(r.tile.get()) > 0;
      if (d > 0 && !also_written) {
        first_chunk_reads_[d].push_back(Access{mine.tile, mine.box, Role::in});
        continue;
      }
      devices_[d]->submit_transfer(true, Access{mine.tile, mine.box, Role::in});
      if (also_written) moved.emplace_back(devices_[d], mine.tile);
      tiles_[d].insert(mine.tile);
    }
  lock.unlock();
  for (const auto& [ctl, tile] : moved) ctl->wait_tile(tile);
}

LoopState::Ended LoopState::end_of_call() {
  std::lock_guard lock(m_);
  running_ = false;
  if (!first_failure_.empty()) constants_on_.assign(devices_.size(), 0);
  Ended e;
  report_.seconds = seconds_since(started_);
  last_call_seconds_ = report_.seconds;
  report_.scheduler = scheduler_->name();
  std::string sides;
  for (const auto& s : report_.sides)
    sides += (sides.empty() ? "" : ", ") + s.name + " " + std::to_string(s.iterations) + " iterations in " +
             std::to_string(s.chunks) + " chunks";
  log().debug("parallel_for over {}: {}; {}", n_, sides, report_.scheduler);
  const bool debug = log().should_log(spdlog::level::debug);
  Engine& home = engine_of(c_);
  if (debug || home.recording) {
    const std::string decisions = scheduler_->decisions();
    if (debug) log().debug("parallel_for: {}", decisions);
    if (home.recording) home.flow_topology().describe(flow_node_, decisions);
  }
  e.report = report_;
  e.failure = first_failure_;
  e.failed_chunk = failed_chunk_;
  e.cause = cause_;
  e.refusal = refusal_;
  e.failed_own = failed_own_;
  e.tiles.assign(tiles_[0].begin(), tiles_[0].end());
  for (std::size_t d = 1; d < tiles_.size(); ++d) e.device_tiles.emplace_back(tiles_[d].begin(), tiles_[d].end());
  return e;
}

LoopState::Ended LoopState::run_to_end(std::size_t n) {
  auto& engine = engine_of(c_);
  for (Controller* d : devices_)
    if (const Request* task = engine_of(*d).host_task_on_this_thread())
      throw UsageError(std::string("parallel_for inside ") + (task->is_hook() ? "hook '" : "host task '") + task->name +
                       "' of one of its controllers would wait for the graph that runs the task");
  claim_and_begin(n);
  // The calling thread counts among the threads the CPU workers leave to the devices
  // (cpu_workers_for): it runs the graph's tasks until the call ends, the graph held open
  // meanwhile, so a device's completion is taken up as soon as it comes even while every CPU token
  // runs a chunk. Which thread stays free is TBB's choice: this one may run CPU chunks too (on two
  // cores, with one CPU worker, it ran all of them), a worker then taking the devices' hooks. Only
  // one thread helps a graph at a time; if another does, this one checks every millisecond while
  // that one runs the tasks.
  const auto all_ended = [this] { return in_flight_ == 0 && tokens_ == 0; };
  std::unique_lock lock(m_);
  // The thread that made the home controller runs graph tasks in its arena until the call ends
  // (Engine::park's way): graph::wait_for_all() below also waits for every other task of the graph,
  // and a call beside an unrelated 5 s host task took 5 s (tests/test_parallel_for.cpp).
  if (engine.parks_here()) {
    const PreciseSleeps precise;  // its sleeps below are 20 us to 5 ms: Linux's slack would add 50
    RequestPtr watched;           // the command last watched, and since when
    std::chrono::steady_clock::time_point watched_since;
    while (!all_ended()) {
      // The call's last device chunks: the thread watches what ends them, where NVIDIA's callbacks
      // and the completion poller's checks came up to a millisecond late (a 6 ms SpMV call over two
      // H100s ended ~1 ms after its last D2H). Between looks it sleeps a fiftieth of the time it
      // has watched that command (20 us to 5 ms: at most ~2 % late, a few hundred looks however
      // long it runs; every 20 us made a CPU device's kernels 17 % slower on two cores), or until a
      // chunk's hook says it ended (a prompt callback: PoCL's). Not NVIDIA's clWaitForEvents, which
      // keeps a core busy meanwhile.
      if (auto watching = command_to_watch()) {
        const auto now = std::chrono::steady_clock::now();
        if (watching->second != watched) watched = watching->second, watched_since = now;
        lock.unlock();
        const bool ended = engine_of(*devices_[watching->first]).look_at(watching->second);
        lock.lock();
        if (!ended) {
          const auto so_far = std::chrono::duration_cast<std::chrono::microseconds>(now - watched_since);
          ended_.wait_for(lock,
                          std::clamp(so_far / 50, std::chrono::microseconds(20), std::chrono::microseconds(5000)));
        }
        continue;
      }
      ArenaPark parking;
      end_wake_ = parking.wake();
      lock.unlock();
      parking.wait();
      lock.lock();
    }
    lock.unlock();
    return end_of_call();
  }
  while (!all_ended()) {
    lock.unlock();
    if (auto helping = engine.try_to_help()) {
      lock.lock();
      graph_held_ = !all_ended();
      if (graph_held_) engine.hold_graph();
      lock.unlock();
      try {
        engine.run_graph_tasks();  // returns once the call's end released the graph
      } catch (...) {
        lock.lock();
        if (graph_held_) engine.release_graph();
        graph_held_ = false;
        throw;
      }
    }
    lock.lock();
    // The graph returned without the call's end only if its context was cancelled: wait as above.
    if (graph_held_) {
      graph_held_ = false;
      engine.release_graph();
    }
    ended_.wait_for(lock, std::chrono::milliseconds(1), all_ended);
  }
  lock.unlock();
  return end_of_call();
}

LoopReport LoopState::run(std::size_t n) {
  Ended e = run_to_end(n);
  // The chunks' own requests report their failures (a body's exception, a kernel's error) here,
  // with those of earlier requests on the loop's tiles that they depended on: each once, so that the
  // next call and wait find the tiles usable again. Every device's are waited for, so none is left
  // to surprise a later wait on that controller; the home controller's come first, as with one
  // device, then the chunk that failed, named.
  TileWaits waits;
  for (const auto& t : e.tiles) waits.wait(c_, t);
  // In program order, whichever tile's wait took them: the earliest is usually the cause.
  std::stable_sort(waits.failures.begin(), waits.failures.end(),
                   [](const FailedRequest& a, const FailedRequest& b) { return a.id < b.id; });
  for (std::size_t d = 0; d < e.device_tiles.size(); ++d)
    for (const auto& t : e.device_tiles[d]) waits.wait(*devices_[d + 1], t);
  if (waits.any()) constants_changed();  // perhaps a constant's move: moved again
  // What is not a request's failure goes as it is where no request's was reported.
  if (e.failure.empty() || (waits.failures.empty() && !waits.lost && waits.other)) {
    waits.rethrow();
    return e.report;
  }
  // RequestFailed, as the header says: the chunk first (a kernel's failure names only the kernel),
  // then its requests' failures; DeviceLost with the same list where a wait found a controller lost.
  std::vector<FailedRequest> failures(1);
  failures[0].kind = "chunk";
  failures[0].name = "parallel_for " + e.failed_chunk;
  failures[0].cause = e.cause;
  failures[0].exception = e.refusal;
  failures[0].cancelled = !e.failed_own;
  failures.insert(failures.end(), waits.failures.begin(), waits.failures.end());
  // A chunk that only waited on an earlier request that failed (a host task that wrote its input
  // threw, say) did nothing wrong: that request is what a user reads first and has to fix.
  if (!e.failed_own) {
    const auto root =
        std::find_if(failures.begin() + 1, failures.end(), [](const FailedRequest& f) { return !f.cancelled; });
    if (root != failures.end()) std::rotate(failures.begin(), root, root + 1);
  }
  if (waits.lost) waits.throw_lost(std::move(failures));
  throw RequestFailed(std::move(failures));
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
    constants_on_.assign(devices_.size(), 0);
    done_ = nullptr;
    tokens_ = cpu_tokens_ = 0;
    running_ = false;
    throw;
  }
}

void LoopState::start(std::size_t n, std::function<void(Ended)> done) {
  if (engine_of(c_).policy == Policy::sync)
    throw UsageError("a started loop needs the async policy: under sync every transfer blocks (use run)");
  if (devices_.size() > 1) throw UsageError("a started loop (a loop node) runs on one device");
  claim_and_begin(n, std::move(done));
  std::unique_lock lock(m_);
  notify_if_ended(lock);  // n == 0, or every chunk already ended
}

}  // namespace hetflow::detail

namespace hetflow {

HeteroLoop::HeteroLoop(Controller& device, LoopBody body, LoopOptions options)
    : HeteroLoop(std::vector<Controller*>{&device}, std::move(body), std::move(options)) {}

HeteroLoop::HeteroLoop(std::vector<Controller*> devices, LoopBody body, LoopOptions options) {
  detail::LoopState::check_devices(devices);
  detail::LoopState::check(body);
  home_ = devices.front();
  state_ = std::make_unique<detail::LoopState>(
      std::move(devices), std::move(options),
      detail::engine_of(*home_).flow_topology().add_node("parallel_for", "parallel_for"));
  state_->set_body(std::move(body));
}
HeteroLoop::~HeteroLoop() = default;
void HeteroLoop::constants_changed() { state_->constants_changed(); }
LoopReport HeteroLoop::operator()(std::size_t n) {
  detail::engine_of(*home_).flow_topology().arrived({}, state_->flow_node());  // a call, in the dumps
  return state_->run(n);
}

}  // namespace hetflow
