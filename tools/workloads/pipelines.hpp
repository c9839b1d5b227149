// The papers' streaming workloads written on hetflow (docs/architecture.md, "Workloads"): the same kernels,
// inputs, launch geometry and host work as the hand-written versions in perf/native/, so their
// outputs and checksums are bit-identical; only who orders the commands differs.
#pragma once
#include <hetflow/controller.hpp>

#include <climits>
#include <memory>
#include <string>
#include <vector>

namespace hetflow::workloads {

struct RunResult {
  double seconds = 0;         // the timed loop: set-up and warm-up launches are outside it
  std::vector<float> output;  // Sobel: last frame's result; Jacobi: final grid; matpow: final product
  double checksum = 0;        // as native::Result::checksum
  int frames = 0;             // Sobel: frames processed
  int slots = 0;              // Sobel: frame slots used
  int host_threads = 0;       // Sobel: threads the host work ran on
};

struct SobelRun {
  int width = 0, height = 0, frames = 0;
  std::string input;     // a .y4m file (its luma plane) instead of generated frames; its size wins
  std::string output;    // write each result as a .y4m frame
  int slots = 0;         // frame slots; 0: kDefaultSobelSlots (workloads/sobel_sizing.hpp)
  int host_threads = 0;  // threads of the host work; 0: default_host_threads (the cores the device leaves)
};

// Per frame i, in slot i % slots (so frames i+1.. have their host read and H2D while frame i's
// kernels run, 004 Fig. 4): host task "read" → move_to → rows → col_smooth, col_diff → magnitude
// → move_from → host task "write". Every edge is inferred from the declared accesses.
RunResult sobel(Controller& c, const SobelRun& run);
// 4-point Jacobi on an n×n grid; every `copy_every` iterations the grid goes to the host and a host
// task sums it.
RunResult jacobi(Controller& c, int n, int iterations, int copy_every = 10);
// P_1 = A·A, P_{k+1} = P_k·A; after each product, D2H and a host task computes its norm.
RunResult matpow(Controller& c, int n, int products);

// Frames in a .y4m file, counting no further than `most` (reads it through once, or up to there:
// a truncated frame past `most` is not read, so not reported).
int count_y4m_frames(const std::string& path, int most = INT_MAX);

class Y4mReader;
class Y4mWriter;
// What a Sobel run reads and writes, for sobel() and sobel_flow_graph(): a .y4m input's size and
// frame count (its first run.frames, or all when run.frames is 0), else run's own; the writer when
// run.output is set. Throws UsageError for a size or count that is not positive, or for more
// frames than the input holds.
struct SobelFrames {
  int width, height, frames;
  std::shared_ptr<Y4mReader> reader;
  std::shared_ptr<Y4mWriter> writer;
};
SobelFrames open_sobel_frames(const SobelRun& run);

}  // namespace hetflow::workloads
