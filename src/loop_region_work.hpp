#pragma once
// How much work each part of a loop's range holds, relative to the rest, learned from the calls
// (time steps) the loop ran (the heterogeneous loop's schedulers, src/loop_schedulers.hpp). A device
// measured by iterations per second alone is judged by where its chunks happened to fall: on
// Mandelbrot's rows (the top rows a hundredth of the mean, the rows through the set three times it)
// the GPU that ran the cheap top looked 30-100x faster than the one that ran the middle, and every
// scheduler kept the loop on one of two GPUs (docs/parallel-for.md, "Mandelbrot's rows"). Measured
// in work — iterations weighted by what their part of the range costs — both GPUs run at one speed.
//
// What a call teaches: its chunks cover its range, each side (a device, the CPU's workers) ran its
// chunks at its own speed, and the range holds the same work in every call. So each call gives one
// equation in the sides' speeds, sum over sides of speed x seconds = iterations, whatever parts each
// side ran; calls that split the range differently fix the speeds (least squares over the recent
// calls, leaning on each side's mean iterations per second where the calls cannot tell), and sides
// known to be of one kind (same_speed) share one. A side's speed turns each chunk's seconds into
// its work, and the chunks in range order give the call's cumulative work at each chunk's edge (a
// knot). The recent calls' knots together (newer calls weigh more where knots coincide), made to
// rise, linear between them, give the weights: their slope, by bin.
//
// Tried first and dropped (simulated Mandelbrot over two GPUs, tests/test_loop_schedulers_devices.cpp):
// per-side profiles, seconds per iteration by bin for each side on its own — one chunk per side and
// call says nothing of where the work lies, and sides that ran different parts were not put on one
// scale (weights nearly flat); the calls' cumulative work averaged as whole curves — a call run in one
// chunk is a straight line end to end, and it flattened the weights; a longer memory (24 calls) — the
// knots of the first, exploring calls stayed and LogFit with the CPU took 31 calls instead of 13 to
// split the rows.
//
// A call teaches only if each of its chunks was measured (a device's chunk that does not fill it
// takes as long as one that does: its time is not its work) and they covered its range. A range
// whose cumulative work stays within kRegularWithin of a regular one's is taken as regular: its
// noise must not move the chunks' edges, and its work stays its iteration count exactly.
#include <algorithm>
#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace hetflow::detail {

class RegionWork {
 public:
  explicit RegionWork(unsigned sides = 1);
  // Sides of one kind (one group number each: devices of the same model) are taken to run at one
  // speed. Two equal GPUs each keeping to their part of the range (one the cheap top, the other the
  // costly middle, call after call) tell nothing of where the work lies unless they are known equal.
  void same_speed(std::vector<unsigned> group_of_side);
  // A new call over [0, n): the call before it is learned from.
  void restart(std::size_t n);
  // Side `side` ran [begin, begin + iterations) in `seconds`; `measured`: its time is its work's
  // (for a device, the chunk filled it).
  void record(unsigned side, std::size_t begin, std::size_t iterations, double seconds, bool measured = true);
  // Whether the range is known to be irregular (else work(b, i) == i).
  bool irregular() const { return irregular_; }
  // The work of [begin, begin + iterations), in iterations of the range's mean cost.
  double work(std::size_t begin, std::size_t iterations) const;
  // The iterations from `begin` (at most `cap`) that hold `work`: rounded up, the fewest whose work
  // reaches it; rounded down, the most whose work stays within it. Over a regular range,
  // ceil(work) and floor(work).
  std::size_t within(std::size_t begin, double work, std::size_t cap, bool round_up) const;
  // The weight of the bin holding iteration i (1: the mean), for logs and tests.
  double weight_at(std::size_t i) const { return weight_[bin_of(std::min(i, n_ ? n_ - 1 : 0))]; }
  // What it knows, for the debug log: "regular", or the weights at each tenth of the range.
  std::string describe() const;

 private:
  static constexpr std::size_t kBins = 256;
  static constexpr std::size_t kCalls = 6;  // the calls remembered
  // A range whose cumulative work never strays further than this (a fraction of all of it) from a
  // regular one's is taken as regular.
  static constexpr double kRegularWithin = 0.03;
  struct Chunk {
    std::size_t begin, iterations;
    unsigned side;
    double seconds;
    bool measured;
  };
  struct Call {
    std::size_t n;
    std::vector<Chunk> chunks;                // in range order, covering [0, n)
    std::vector<double> seconds, iterations;  // by side
  };
  void learn();
  std::size_t bin_of(std::size_t i) const { return n_ ? std::min(kBins - 1, i * kBins / n_) : 0; }
  std::size_t bin_begin(std::size_t b) const { return (b * n_ + kBins - 1) / kBins; }
  double before(std::size_t i) const;  // the work of [0, i)
  const unsigned sides_;
  std::vector<unsigned> group_;  // by side
  std::size_t n_ = 0;
  std::vector<Chunk> this_call_;
  std::deque<Call> calls_;      // newest first
  std::vector<double> weight_;  // by bin: 1 is the mean
  std::vector<double> prefix_;  // the work of the bins before each bin (kBins + 1)
  bool irregular_ = false;
};

}  // namespace hetflow::detail
