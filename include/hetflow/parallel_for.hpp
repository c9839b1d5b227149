#pragma once
// A loop over [0, n) whose iterations run partly on the CPU cores and partly on the device, in
// chunks a scheduler sizes as it learns each side's speed (docs/parallel-for.md): LogFit (seed 002),
// static, dynamic, HGuided or the oracle. CPU chunks run the loop's C++ body on TBB workers; device
// chunks submit its kernel over the chunk's sub-range (Range(...).offset(begin)), and the regions a
// chunk writes come back to the host image while the next chunk runs. Every chunk is a request of the
// controller, so hazards, dumps and traces see them like any other. No thread blocks or spins while
// the device works (the chunks go on from completion hooks, Controller::on_ready); only the thread
// that called the loop waits for its end (once no CPU chunk can start, it looks at the device
// chunks' last commands, sleeping a fiftieth of the time it has watched between looks and woken by
// the chunks' hooks, so the call ends at most ~2 % late without keeping a core busy). The schedulers
// learn from chunk times: a device chunk is timed by its kernels' OpenCL profiling counters when the controller
// profiles (ControllerOptions::profiling = true: do set it for LogFit), else by the host clock from its submission to
// the notice of its end, which can come up to a millisecond late.
//
//   hetflow::LoopBody body;
//   body.cpu = [&](hetflow::Chunk c) { for (auto i = c.begin; i < c.end; ++i) y[i] = f(x[i]); };
//   body.device = [&](hetflow::Controller& ctl, hetflow::Chunk c) {  // k guards its end: if (i < end)
//     ctl.launch(k, hetflow::Range((c.size() + 63) / 64 * 64).offset(c.begin).local(64),
//                in(x), out(y.region(hetflow::span_of(c))), cl_ulong(c.end));
//     };
//   body.reads = {in(x)};
//   body.writes = [&](hetflow::Chunk c) { return std::vector{out(y.region(hetflow::span_of(c)))}; };
//   hetflow::HeteroLoop loop(ctl, body, {.scheduler = "logfit"});
//   for (int step = 0; step < steps; ++step) loop(n);   // LogFit's model carries over the steps
//
// Several devices: HeteroLoop({&gpu0, &gpu1}, body, options), one Controller per device, the body
// written once against the first ("home") controller: its tiles and kernels. The contract:
// - CPU chunks are the home controller's hooks, as with one device. A chunk of device d > 0 runs
//   body.device(ctl_d, chunk): launch on the Controller& it is given, with the home kernels and
//   tiles; the launch gets the same program built for ctl_d's context and ctl_d's own tiles over
//   the home tiles' host images (same host memory, a device image of its own). Its writes come
//   back into the home tiles' host images: the one output array holds every side's results.
// - What device d sees of a home tile is what the loop moved there: `reads` (whole, before its
//   first chunk of the call), `constants` (before its first chunk of the loop) and the chunk's
//   `writes`. A launch using any other home tile is refused
//   (UsageError), except device-only tiles, which are each device's own scratch (never shared).
// - A device chunk of device d > 0 that launches on the home controller (a controller the body
//   captured), or launches nothing on the one it is given, is refused (UsageError): its transfers
//   back would bring that device's untouched images over the results.
// - A call first waits for the home controller's earlier requests on the loop's tiles (a failed
//   one is thrown then). Reads the loop also writes go to every device before any chunk starts;
//   the others go to the home device at once and to another device with its first chunk (none to
//   a device given nothing). Do not
//   submit requests on those tiles from other threads while the call runs. On return every
//   written region is in the home host images (host-latest, as after CPU chunks): requests
//   submitted later on the home controller (move_to, a host task) see the results; the home
//   device image of what other devices wrote is stale until moved.
// - Every controller under the async policy; listed once each; none null (UsageError). Two
//   controllers may share one physical device. Keep them alive as long as the loop.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <hetflow/controller.hpp>

namespace hetflow {

// Iterations [begin, end) of a loop.
struct Chunk {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};

// The box of elements [c.begin, c.end) of a 1-D tile.
inline Box span_of(Chunk c) { return Box{{c.begin, 0, 0}, {c.size(), 1, 1}}; }
// The box of rows [c.begin, c.end) of a 2-D tile (of every plane, of a 3-D one): t.rows(c.begin,
// c.size())'s.
template <class T>
Box rows_of(const Tile<T>& t, Chunk c) {
  return t.rows(c.begin, c.size()).box();
}

// What one loop does, and to which tiles.
struct LoopBody {
  // Iterations [c.begin, c.end) on the host images, on a TBB worker; chunks run at once on
  // disjoint ranges. Unset: the CPU takes no chunk. A CPU chunk calls it once per piece, back to
  // back (a 64th of the chunk, doubling while a piece is quick); between pieces it may hand the
  // rest to a device that has nothing more to run and would run it far sooner (not under a static
  // or oracle split). Each iteration still runs once, on one side.
  std::function<void(Chunk)> cpu{};
  // Submits the device's work for [c.begin, c.end) on the controller: launches (with
  // Range(...).offset(c.begin), or the chunk as arguments), no transfers. Unset: CPU only. A
  // chunk whose body launches nothing on the controller it is given is refused (UsageError).
  // LogFit may launch a chunk in pieces: then this runs once per piece, back to back, each
  // piece's results coming back while the next one's kernels run (the report counts one chunk).
  std::function<void(Controller&, Chunk)> device{};
  // What every chunk reads, in() only: moved to the device once per call, before its first chunk.
  // A device-only tile here or in `constants` is refused at the call (UsageError) where there is a
  // CPU body (CPU chunks read host images) or several devices, and so is an out() or io() in either.
  std::vector<Access> reads{};
  // What every chunk reads and no call changes (the matrix an iterative solver multiplies by):
  // moved to a device once, before its first chunk of the loop, and kept there over the calls — as
  // a read, SpMV's 400 MB matrix was 8 ms of each 13 ms call on an H200. After changing their host
  // images, call HeteroLoop::constants_changed(). No chunk may write a region of them (UsageError
  // at the call; other regions of the same tile may be written).
  std::vector<Access> constants{};
  // What a chunk writes (out()/io() of tiles or regions within them; a chunk given in() or a region
  // past its tile is refused, named, and fails the call): a CPU chunk's roles, and what comes
  // back from the device after a device chunk — the parts of it that the chunk's launches declare
  // writing, nothing else. With a CPU body, a device-only tile among them is refused at the call
  // (CPU chunks write host images). Chunks' regions may overlap (every chunk's the whole tile, say), and the
  // chunks whose regions overlap then wait for each other: correct, but one at a time. Over several
  // devices they must be disjoint (one device's transfers back are not ordered with another's
  // writes): a loop whose first and last iterations' writes overlap is refused at the call.
  std::function<std::vector<Access>(Chunk)> writes{};
};

struct LoopOptions {
  // "logfit", "static:S" (S of each call to the devices, 0..1, divided among them by each one's
  // throughput in the previous call, evenly in the first),
  // "static:S1,S2,..." (one share per device), "dynamic:C" (chunks of C iterations), "hguided",
  // "oracle" (tries static shares, one per call, keeps the best). LogFit learns in its first call
  // (device chunks of growing sizes, CPU probes: on one H200, Mandelbrot 4096x4096's first call
  // 34-59 ms, later ones 3.3-3.8 ms, the device alone 4.0): a loop called again belongs in a
  // HeteroLoop, and a loop run once whose split is known is better given a static share.
  std::string scheduler = "logfit";
  // CPU chunks at once; 0 = the TBB threads less one, and two fewer for each device past the first.
  // Never more than the threads less one: one thread stays for the devices, whose completions and
  // next launches are TBB tasks too (with every thread in a CPU chunk they waited for the CPU to run
  // out of chunks: seed 002's starved GPU token). The calling thread is that one while it waits.
  // Further devices need cores too, for their drivers' threads (two H100s, 32 threads: with 30 or
  // 31 workers the GPUs' notices came ~4 ms late, likely a scheduler tick; with 29 they did not).
  // LoopReport::cpu_workers says how many ran.
  unsigned cpu_workers = 0;
  // Device chunks in flight. With one, the device idles for each chunk's round trip (completion
  // notice, next launch); two made HGuided 1.3-1.5x faster on the H200, where LogFit, whose model
  // then assumed one chunk in flight, collapsed (perf/RESULTS.md). LogFit now tracks queued chunks
  // and, on a simulated H200, loses nothing with two (docs/parallel-for.md); one stays the default
  // until that is measured there.
  unsigned device_slots = 1;
};

// What one call did.
struct LoopReport {
  struct Side {
    std::string name;  // "cpu", or the device's name (sides[1 + d] is device d)
    std::size_t iterations = 0, chunks = 0;
    double busy_seconds = 0;  // summed chunk times (CPU: over its workers)
  };
  std::vector<Side> sides;
  double seconds = 0;        // the call, end to end
  unsigned cpu_workers = 0;  // CPU chunks at most at once (LoopOptions::cpu_workers, bounded); 0: no CPU body
  std::string scheduler;     // its name and what it decided, for logs
};

namespace detail {
class LoopState;
}

// One loop, kept across calls so its scheduler's measurements persist (time steps).
class HeteroLoop {
 public:
  // Throws UsageError for an unknown scheduler, or a body with neither side.
  HeteroLoop(Controller& device, LoopBody body, LoopOptions options = {});
  // Over several devices, the first the home controller (above); report sides: "cpu", then one per
  // device in this order. Also UsageError for an empty list, a null or repeated controller.
  HeteroLoop(std::vector<Controller*> devices, LoopBody body, LoopOptions options = {});
  ~HeteroLoop();
  HeteroLoop(const HeteroLoop&) = delete;
  HeteroLoop& operator=(const HeteroLoop&) = delete;

  // Runs iterations [0, n) once each, for any n, and returns when all have run and their writes are in the
  // host images: a device chunk ends once every launch of its body has, one writing no tile the loop
  // knows of (only in() tiles) included. A chunk that failed (its body threw, its launch was refused,
  // LoopBody::writes threw for it, or it was cancelled; every launch of its body is the chunk's, a
  // scratch kernel's too) stops the hand-out; the call then throws RequestFailed (DeviceLost, with
  // the same failures, if its waits found a controller lost) naming it (side and range), after
  // every chunk already started has ended: its first failure is the chunk (kind "chunk"; for a
  // refused one `exception` holds what the submission or writes threw, a UsageError say; for one
  // whose own command failed its cause names that command and the driver's reason), the one whose
  // own work failed rather than one that waited on it, then the failed requests on the loop's
  // tiles, earlier ones included, each reported once. Where no chunk's own work failed (it waited on
  // an earlier request on the loop's tiles that failed: a host task that wrote its input threw),
  // that request comes first and the chunk after it, `cancelled`. Not from inside a host task or hook of the
  // same controller, and one call at a time per HeteroLoop (two loops may run at once, from two
  // threads).
  LoopReport operator()(std::size_t n);
  // LoopBody::constants' host images changed: the next call moves them to every device again.
  void constants_changed();

 private:
  Controller* home_ = nullptr;
  std::unique_ptr<detail::LoopState> state_;
};

// One call of a loop; the scheduler's state is dropped on return.
inline LoopReport parallel_for(Controller& device, std::size_t n, LoopBody body, LoopOptions options = {}) {
  HeteroLoop loop(device, std::move(body), std::move(options));
  return loop(n);
}
inline LoopReport parallel_for(std::vector<Controller*> devices, std::size_t n, LoopBody body,
                               LoopOptions options = {}) {
  HeteroLoop loop(std::move(devices), std::move(body), std::move(options));
  return loop(n);
}

}  // namespace hetflow
