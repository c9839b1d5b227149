#pragma once
// The state of one heterogeneous loop (include/hetflow/parallel_for.hpp), kept across its calls:
// its body, its devices, its scheduler and one call's chunks in flight. HeteroLoop runs calls and
// waits for them (run); hetflow::flow::loop_node starts them and is told when they end (start), one at
// a time, on one device. Sides are numbered as the scheduler's: -1 the CPU, d >= 0 device d; device 0
// is the home controller (the CPU chunks' and the tiles'), the others run the body through a
// DeviceView (src/device_view.hpp).
#include <hetflow/parallel_for.hpp>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <tbb/task_group.h>

#include "device_view.hpp"
#include "loop_device_price.hpp"
#include "loop_schedulers.hpp"
#include "request.hpp"

namespace hetflow::detail {

struct TileState;

class LoopState {
 public:
  // `flow_node`: the loop's node in the home controller's record of the program's flow graph
  // (FlowTopology). The body comes with set_body, before the first call. `devices` as checked by
  // check_devices; the first is the home controller.
  // `make_scheduler` (cpu workers, devices), where given, in place of LoopOptions::scheduler's (tests
  // drive the engine with a scheduler of their own).
  using SchedulerFactory = std::function<std::unique_ptr<LoopScheduler>(unsigned, unsigned)>;
  LoopState(std::vector<Controller*> devices, LoopOptions options, std::uint32_t flow_node,
            const SchedulerFactory& make_scheduler = nullptr);
  LoopState(Controller& c, LoopOptions options, std::uint32_t flow_node)
      : LoopState(std::vector<Controller*>{&c}, std::move(options), flow_node) {}
  // UsageError for an empty list, a null entry, a controller listed twice, or several devices where
  // one is under the sync policy.
  static void check_devices(const std::vector<Controller*>& devices);

  // One call: every iteration once; returns when all have ended, or throws naming the first failure.
  LoopReport run(std::size_t n);

  // How a call that was started ended: its report, the first failure ("" if none) and the tiles its
  // chunks used (where their failed requests are).
  struct Ended {
    LoopReport report;
    std::string failure;
    // The chunk that failed first ("device chunk [b, e)") and why; what its refusal threw, if it was
    // refused at submission (a UsageError, say).
    std::string failed_chunk, cause;
    std::exception_ptr refusal;
    bool failed_own = false;  // failed_chunk's own work failed; else it was cancelled by what it waited on
    std::vector<std::shared_ptr<TileState>> tiles;
    // The same on each further device (index d - 1): its own tiles over the home ones.
    std::vector<std::vector<std::shared_ptr<TileState>>> device_tiles;
  };
  // As run, but returns how the call ended instead of reporting its failures (the chunks' failed
  // requests stay with the controller, to be reported by a wait or taken).
  Ended run_to_end(std::size_t n);
  // Starts a call and returns at once (async policy only: under sync every transfer blocks; one
  // device only); `done` runs once, on the thread that ended the last chunk. One call at a time.
  void start(std::size_t n, std::function<void(Ended)> done);
  // The body of the calls from now on (a loop_node's message brings its own). Other constants than
  // the last body's are moved again.
  void set_body(LoopBody body);
  // LoopBody::constants' host images changed: moved again to each device before its next chunk.
  void constants_changed();
  // Throws UsageError for a body with neither side or no writes.
  static void check(const LoopBody& body);
  std::uint32_t flow_node() const { return flow_node_; }

 private:
  // A call starts (refused while another runs) with `done` for start(), none for run; a refused
  // begin() leaves the loop free for the next call.
  void claim_and_begin(std::size_t n, std::function<void(Ended)> done = nullptr);
  void begin(std::size_t n);  // a call's set-up and first chunks
  // Before a call's first chunk: what the further devices need of the home controller (below).
  void prepare_further_devices(std::size_t n);
  // LoopBody::constants to the home device, unless there already.
  void move_constants_home();
  // UsageError if the chunks of [0, n) write a region of LoopBody::constants, or, with a CPU body,
  // a device-only tile.
  void check_constants(std::size_t n) const;
  // UsageError for a device-only tile in LoopBody::reads or constants of a loop with a CPU body (one
  // device; over several, prepare_further_devices refuses them): its refusal came from a CPU chunk's
  // hook, in the words of an internal on_ready hook, once the device's chunks had run.
  void check_host_reads() const;
  // Over several devices, chunks must write disjoint regions: another device's transfers back are
  // not ordered with this controller's requests. Refuses (UsageError) a loop whose first and last
  // iterations' writes overlap (every chunk's the whole tile, say), which came out silently wrong.
  void check_disjoint_writes(std::size_t n) const;
  Ended end_of_call();  // once every chunk has ended
  void next_cpu();
  // A CPU chunk's body, run in pieces that start at a 64th of the chunk and double while each takes
  // under half a millisecond. Between pieces it runs the device chunks' hooks that are ready, and,
  // while a device would take a tail (tail_takers: a parked token, or a device running tails), it
  // gives its tail to that device when the device would run it in well under the time the CPU
  // would still take (yield_tail). Returns where the CPU stopped; `wake`: the device to go on with
  // the tail (its parked token, or one added for it).
  std::size_t run_cpu_pieces(Chunk chunk, std::vector<unsigned>& wake);
  bool yield_tail(Chunk chunk, std::size_t stopped_at, double seconds, std::vector<unsigned>& wake);
  bool is_tail(int side, Chunk chunk);  // a device chunk made of a CPU chunk's tail (takes m_)
  void next_device(unsigned d);
  // Hands out the next chunk to a token of one side, or drops the token (false). Under m_.
  // `piece`: a device chunk's pieces, as the scheduler asks (0: launched whole).
  bool take(int side, Chunk& chunk, std::size_t* piece = nullptr);
  // `round_trip`: a device chunk's host time from submission to its end's notice (the scheduler
  // learns the per-chunk cost that profiled kernel times leave out).
  // `refusal`: what the chunk's submission or its CPU body threw.
  // `own`: the chunk's own work failed (its body threw, it was refused, one of its own commands
  // failed), where the others only waited on a request that failed elsewhere.
  void chunk_ended(int side, Chunk chunk, double seconds, const std::string& failure, double round_trip = 0,
                   std::exception_ptr refusal = nullptr, bool own = true);
  // chunk_ended in parts, for a device chunk whose token goes on at its kernels' end: the scheduler
  // told of its time (chunk_measured) or of its failure (chunk_failed, which stops the hand-out),
  // then its end once its transfers back are done (chunk_back: the report, in_flight_).
  void chunk_measured(int side, Chunk chunk, double seconds, double round_trip);
  void chunk_failed(int side, Chunk chunk, const std::string& failure, std::exception_ptr refusal = nullptr,
                    bool own = true);
  void chunk_back(int side, Chunk chunk, double seconds, const std::string& failure,
                  std::exception_ptr refusal = nullptr, bool own = true);
  // A chunk taken but refused before anything of it was submitted (its writes threw, its submission
  // threw): it ends, failed, and its token stops. `by`: what threw, where not the submission. A
  // refusal for a lost controller is the chunk's own failure only if its kernel faulted.
  void refused(int side, Chunk chunk, std::exception_ptr why, const char* by = "", bool kernel_failed = false);
  // Under m_: the call's first failure is kept (failed_chunk_, cause_, refusal_), unless a later
  // chunk's own work failed where the first only waited on it; the hand-out stops.
  void note_failure(int side, Chunk chunk, const std::string& failure, std::exception_ptr refusal, bool own);
  void drop_token(int side);  // under m_: a token that took a chunk stops
  // Under m_ (released here): if every chunk has ended, wakes run() or calls start()'s `done`.
  void notify_if_ended(std::unique_lock<std::mutex>& lock);
  void note_tiles(unsigned device, const std::vector<Access>& accesses);  // under m_
  // The tiles a device chunk's launches wrote, whatever its writes say (a scratch tile): the call
  // waits on them at its end, so it reports their failures, not the next wait_all().
  void note_launched(unsigned device, const std::vector<Access>& launched);
  // Why a chunk's writes cannot be taken, and the refusal's cause's prefix; none where `why` is null.
  struct Unwritable {
    std::exception_ptr why;
    const char* by = "";
    explicit operator bool() const { return bool(why); }
  };
  // Appends body_.writes(chunk) to `to`; what it threw, if it did, or what it gave that no chunk may
  // write (an in() role, a region outside its tile). Such a chunk is refused, and not the hook that
  // asked for it: the chunk taken, never ended, held the call for ever.
  Unwritable chunk_writes(Chunk chunk, std::vector<Access>& to) const;
  // Whether a device chunk's write must go to the device before it: an io() region of a tile with
  // a host image that the call's reads (LoopBody::reads, moved at its start) do not hold.
  bool read_before_device_chunk(const Access& w) const;
  // A device chunk's kernels and transfers back, until the transfers' hook runs; then its hooks.
  void note_chunk_ends(unsigned device, Chunk chunk, const RequestList& kernels, const RequestList& transfers);
  void note_chunk_hooks(unsigned device, Chunk chunk, RequestList hooks);
  // Runs the device chunks' hooks that are ready and that no thread has taken yet (a CPU chunk,
  // between its pieces).
  void run_ready_device_hooks();
  // Under m_: no CPU chunk runs or can start any more, or nothing is left to hand out.
  bool devices_alone() const;
  // Under m_: an enqueued command that ends a device chunk in flight, once devices_alone().
  std::optional<std::pair<unsigned, RequestPtr>> command_to_watch() const;
  void device_chunk_synchronously(Chunk chunk);  // sync policy: from the calling thread
  // UsageError: the home device's body launched nothing for `chunk`.
  [[noreturn]] void refuse_no_launch(Chunk chunk) const;
  std::string side_text(int side) const;  // "cpu", "device", or "device 1 (NAME)" with several

  std::vector<Controller*> devices_;
  Controller& c_;                                   // the home controller, devices_[0]
  std::vector<std::unique_ptr<DeviceView>> views_;  // per device; none for the home one
  LoopBody body_;
  LoopOptions options_;
  unsigned cpu_workers_;
  std::unique_ptr<LoopScheduler> scheduler_;
  unsigned device_slots_ = options_.device_slots;
  double last_call_seconds_ = 0;
  std::uint32_t flow_node_;  // in the controller's record of the program's flow graph

  // Held while a chunk's requests are submitted (a CPU chunk's hook; a device chunk's transfers
  // over, launches and transfers back), so they follow one another in the controller's program order:
  // interleaved, a CPU chunk submitted between a device chunk's transfer over and back of a region
  // both write (io(hist), every chunk) ran in between, and the transfer back overwrote its results
  // (a user's trial, 2026-11-29: 3-40 % of a histogram's counts lost). Nothing blocks under it
  // (Engine::DeferredBlocking); recursive, as a hook that runs at once may start the next chunk.
  std::recursive_mutex submitting_;
  // One call's state, under m_.
  std::mutex m_;
  std::condition_variable ended_;
  std::size_t n_ = 0, next_ = 0;
  unsigned tokens_ = 0, in_flight_ = 0;
  unsigned cpu_tokens_ = 0;  // of tokens_
  bool stopping_ = false;
  std::string first_failure_;  // "<failed_chunk_>: <cause_>"
  std::string failed_chunk_, cause_;
  std::exception_ptr refusal_;
  bool failed_own_ = false;  // failed_chunk_'s own work failed
  LoopReport report_;
  std::vector<std::set<std::shared_ptr<TileState>>> tiles_;  // per device (the CPU's with the home one)
  std::vector<std::vector<Access>> first_chunk_reads_;       // per device: moved with its first chunk
  struct ChunkEnds {
    unsigned device;
    std::size_t begin;  // the chunk's
    RequestList kernels, transfers, hooks;
  };
  std::vector<ChunkEnds> chunk_ends_;  // device chunks in flight
  // A CPU chunk that the devices would finish sooner gives them its tail. Run-once loops paid for it
  // most: LogFit's first CPU chunks are 64 iterations each, and 64 of Mandelbrot 4096²'s rows through
  // the set held a worker 0.4 s after the H200 had run every other row in a few milliseconds.
  // Under m_: the tails given back, the device tokens that found nothing left to take while CPU
  // chunks ran or the scheduler gave them nothing more (parked: they hold their token, and decide
  // again once no CPU chunk runs: LoopState::chunk_back), the begins of device chunks made of a tail (the
  // scheduler is not told of them: a tail is not a size it chose), and the CPU chunks in flight.
  struct GivenTail {
    unsigned device;  // the one it was priced for, and woken for
    Chunk tail;
  };
  std::vector<GivenTail> given_back_;
  std::vector<unsigned> parked_;
  std::set<std::size_t> tails_taken_;
  unsigned cpu_in_flight_ = 0;
  bool may_park_ = false;  // async: a hook, not the calling thread, runs the device tokens
  // Per device, under m_: tails given to it and not back, and the tokens added to run more of them at once. With
  // one token a device ran N-body's 14 tails one after another, a 0.21 ms kernel every ~0.5 ms, each
  // tail waiting for the last one's notice (perf/RESULTS.md, 2026-11-29 03:54Z). A token added for
  // a tail stops when it finds nothing to take, instead of waiting.
  std::vector<unsigned> tails_running_, tail_tokens_;
  // A device's in-order queue runs its tails one after another, and each is priced behind those
  // ahead of it (yield_tail); this bounds the tokens a device gets for them.
  static constexpr unsigned kMostTailsInFlight = 8;
  // Whether a device would take a tail now (tail_takers()); read between a CPU chunk's pieces.
  std::atomic<bool> device_waiting_{false};
  bool tail_takers() const;  // under m_: a parked device token, or a device running tails with room for more
  void note_tail_takers();   // under m_: device_waiting_ = tail_takers()
  // Per device: LoopBody::constants moved there and not changed since. Kept across calls; cleared by
  // constants_changed() and by a failed call (a failed move must not leave the device's image trusted).
  std::vector<char> constants_on_;
  // Per device: seconds per iteration of its latest chunk that ended well (0: none yet), kept across
  // calls: when its next chunk should end, for the completion poller (Engine::expect_end).
  std::vector<double> device_per_iteration_;
  std::vector<DeviceTailPrice> device_tail_price_;  // per device: what it would take for a CPU chunk's tail
  std::chrono::steady_clock::time_point started_;
  std::function<void(Ended)> done_;  // a started call's
  bool running_ = false;             // a call is between claim() and its end
  bool graph_held_ = false;          // run's thread holds the home graph open until the call's end
  // The one task the calling thread's task_group waits for while it runs graph tasks (run_to_end),
  // never run: the call's end destroys it, which ends that wait.
  tbb::task_handle end_wake_;
};

}  // namespace hetflow::detail
