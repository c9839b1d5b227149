#pragma once
// The state of one heterogeneous loop (include/hetflow/parallel_for.hpp), kept across its calls:
// its body, its scheduler and one call's chunks in flight. HeteroLoop runs calls and waits for them
// (run); hetflow::flow::loop_node starts them and is told when they end (start), one at a time.
#include <hetflow/parallel_for.hpp>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "loop_schedulers.hpp"

namespace hetflow::detail {

struct TileState;

class LoopState {
 public:
  // `flow_node`: the loop's node in the controller's record of the program's flow graph
  // (FlowTopology). The body comes with set_body, before the first call.
  LoopState(Controller& c, LoopOptions options, std::uint32_t flow_node);

  // One call: every iteration once; returns when all have ended, or throws naming the first failure.
  LoopReport run(std::size_t n);

  // How a call that was started ended: its report, the first failure ("" if none) and the tiles its
  // chunks used (where their failed requests are).
  struct Ended {
    LoopReport report;
    std::string failure;
    std::vector<std::shared_ptr<TileState>> tiles;
  };
  // As run, but returns how the call ended instead of reporting its failures (the chunks' failed
  // requests stay with the controller, to be reported by a wait or taken).
  Ended run_to_end(std::size_t n);
  // Starts a call and returns at once (async policy only: under sync every transfer blocks); `done`
  // runs once, on the thread that ended the last chunk. One call at a time.
  void start(std::size_t n, std::function<void(Ended)> done);
  // The body of the calls from now on (a loop_node's message brings its own).
  void set_body(LoopBody body);
  // Throws UsageError for a body with neither side or no writes.
  static void check(const LoopBody& body);
  std::uint32_t flow_node() const { return flow_node_; }

 private:
  // A call starts (refused while another runs) with `done` for start(), none for run; a refused
  // begin() leaves the loop free for the next call.
  void claim_and_begin(std::size_t n, std::function<void(Ended)> done = nullptr);
  void begin(std::size_t n);  // a call's set-up and first chunks
  Ended end_of_call();        // once every chunk has ended
  void next_cpu();
  void next_device();
  // Hands out the next chunk to a token of one side, or drops the token (false). Under m_.
  bool take(bool cpu, Chunk& chunk);
  // `round_trip`: a device chunk's host time from submission to its end's notice (the scheduler
  // learns the per-chunk cost that profiled kernel times leave out).
  void chunk_ended(bool cpu, Chunk chunk, double seconds, const std::string& failure, double round_trip = 0);
  // Under m_ (released here): if every chunk has ended, wakes run() or calls start()'s `done`.
  void notify_if_ended(std::unique_lock<std::mutex>& lock);
  void note_tiles(const std::vector<Access>& accesses);  // under m_
  void device_chunk_synchronously(Chunk chunk);          // sync policy: from the calling thread

  Controller& c_;
  LoopBody body_;
  LoopOptions options_;
  unsigned cpu_workers_;
  std::unique_ptr<LoopScheduler> scheduler_;
  unsigned device_slots_ = options_.device_slots;
  double last_call_seconds_ = 0;
  std::uint32_t flow_node_;  // in the controller's record of the program's flow graph

  // One call's state, under m_.
  std::mutex m_;
  std::condition_variable ended_;
  std::size_t n_ = 0, next_ = 0;
  unsigned tokens_ = 0, in_flight_ = 0;
  bool stopping_ = false;
  std::string first_failure_;
  LoopReport report_;
  std::set<std::shared_ptr<TileState>> tiles_;
  std::chrono::steady_clock::time_point started_;
  std::function<void(Ended)> done_;  // a started call's
  bool running_ = false;             // a call is between claim() and its end
};

}  // namespace hetflow::detail
