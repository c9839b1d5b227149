#include "workloads/pipelines.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"
#include "workloads/sobel_sizing.hpp"

namespace hetflow::workloads {
namespace {

// The workloads' kernels are built with exactly the native baselines' options, so the results
// are bit-identical to theirs.
constexpr const char* kBuildOptions = "-cl-kernel-arg-info";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Range stencil_range(int width, int height) {
  return Range(round_up(std::size_t(width), kStencilLocal), round_up(std::size_t(height), kStencilLocal))
      .local(kStencilLocal, kStencilLocal);
}

// Adds per-step host results in step order, whatever order the host tasks ran in, so the sum is
// the one a sequential loop makes.
double ordered_sum(const std::vector<double>& parts) {
  double s = 0;
  for (double p : parts) s += p;
  return s;
}

struct SobelKernels {
  Kernel rows, col_smooth, col_diff, magnitude;
};

SobelKernels sobel_kernels(Controller& c) {
  return {c.kernel("sobel.cl", "sobel_rows", kBuildOptions), c.kernel("sobel.cl", "sobel_col_smooth", kBuildOptions),
          c.kernel("sobel.cl", "sobel_col_diff", kBuildOptions),
          c.kernel("sobel.cl", "sobel_magnitude", kBuildOptions)};
}

struct SobelImages {
  std::vector<Tile<float>> frame_in, frame_out;
  Tile<float> row_diff, row_smooth, gx, gy;
  // Reading and writing a .y4m stream must follow frame order: tasks that share these one-element
  // tiles as io() are ordered by the engine like any other hazard. Generated frames and their sums
  // take turns too, one frame at a time with the whole host arena, as the native baselines' main
  // and consumer threads do: left free, the generations of all slots' next frames started together,
  // shared the arena and ended together ~4x later (2 ms for a 4K frame where one takes 0.5), so the
  // H2D lane waited (perf/RESULTS.md, 2026-11-26 07:53Z).
  Tile<int> source_turn, writer_turn, consumer_turn;
  // Frames in flight, as the native async loop paces them: it generates frame i only once frame
  // i-slots-1 is summed (it blocks before that frame's D2H). Frame i's load and sum share
  // in_flight[i % (slots + 1)], so the load waits for the sum slots + 1 frames back. Left free, the
  // loads ran up to ~4 x slots frames ahead of the sums, each sum started 1.7-3.5 ms after its D2H
  // had ended and took 2x the CPU at 4K; native's sum, put off 1.5 ms the same way, slowed alike (the
  // frame no longer in the cache the D2H wrote it to; perf/RESULTS.md, 2026-11-26 12:50-13:03Z).
  std::vector<Tile<int>> in_flight;
};

SobelImages sobel_images(Controller& c, const Extent& extent, int slots) {
  SobelImages images;
  for (int s = 0; s < slots; ++s) {
    images.frame_in.push_back(c.tile<float>(extent, "frame" + std::to_string(s)));
    images.frame_out.push_back(c.tile<float>(extent, "edges" + std::to_string(s)));
  }
  images.row_diff = c.device_tile<float>(extent, "row_diff");
  images.row_smooth = c.device_tile<float>(extent, "row_smooth");
  images.gx = c.device_tile<float>(extent, "gx");
  images.gy = c.device_tile<float>(extent, "gy");
  images.source_turn = c.tile<int>(1, "frame_source");  // the .y4m reader or the generator
  images.writer_turn = c.tile<int>(1, "y4m_writer");
  images.consumer_turn = c.tile<int>(1, "consumer");
  for (int k = 0; k <= slots; ++k) images.in_flight.push_back(c.tile<int>(1, "in flight " + std::to_string(k)));
  return images;
}

// Frame i in slot i % slots: the slots' frames share one set of device intermediates, so the
// engine orders their kernels by the hazards on them.
struct SobelPipeline {
  Controller& c;
  int w, h;
  std::size_t count;
  std::shared_ptr<Y4mReader> reader;
  std::shared_ptr<Y4mWriter> writer;
  std::shared_ptr<tbb::task_arena> arena;
  SobelKernels kernels;
  SobelImages images;
  Range range;

  void launch_frame(int slot) {
    c.launch(kernels.rows, range, in(images.frame_in[slot]), out(images.row_diff), out(images.row_smooth), w, h);
    c.launch(kernels.col_smooth, range, in(images.row_diff), out(images.gx), w, h);
    c.launch(kernels.col_diff, range, in(images.row_smooth), out(images.gy), w, h);
    c.launch(kernels.magnitude, range, in(images.gx), in(images.gy), out(images.frame_out[slot]), w, h);
  }

  // Warm-up (untimed): each slot's whole frame once, as the native baselines do, so no page of any
  // image is first touched inside the timed loop (on a CPU device a first write there is a page
  // fault whose TLB shoot-down interrupts the kernels on the other cores).
  void warm_up(int slots) {
    for (int slot = 0; slot < slots; ++slot) {
      Tile<float> frame = images.frame_in[std::size_t(slot)], result = images.frame_out[std::size_t(slot)];
      c.host_task(
          "warm-up " + std::to_string(slot),
          [frame, result, count = count] {
            std::fill_n(frame.data(), count, 0.0f);
            std::fill_n(result.data(), count, 0.0f);
          },
          out(frame), out(result));
      c.move_to(frame);
      launch_frame(slot);
      c.move_from(result);
    }
  }

  Tile<int> in_flight(int i) const { return images.in_flight[std::size_t(i) % images.in_flight.size()]; }

  void load_frame(int i, Tile<float> frame) {
    if (reader)
      c.host_task(
          "read frame " + std::to_string(i),
          [frame, reader = reader, i] {
            if (!reader->read_luma(frame.data())) throw Error("input ended before frame " + std::to_string(i));
          },
          out(frame), io(images.source_turn), io(in_flight(i)));
    else
      // In the host arena, as the native baselines generate: generate_frame is a tbb::parallel_for,
      // which outside it spreads over every worker, onto the cores a CPU device's kernels need.
      c.host_task(
          "generate frame " + std::to_string(i),
          [frame, w = w, h = h, i, arena = arena] { arena->execute([&] { generate_frame(frame.data(), w, h, i); }); },
          out(frame), io(images.source_turn), io(in_flight(i)));
  }

  void consume_frame(int i, Tile<float> result, std::vector<double>& sums) {
    c.host_task(
        "consume frame " + std::to_string(i),
        [result, count = count, &sums, i, arena = arena] {
          arena->execute([&] { sums[std::size_t(i)] = host_sum(result.data(), count); });
        },
        in(result), io(images.consumer_turn), io(in_flight(i)));
    if (writer)
      c.host_task(
          "write frame " + std::to_string(i), [result, writer = writer] { writer->write_luma(result.data()); },
          in(result), io(images.writer_turn));
  }

  void submit_frame(int i, int slot, std::vector<double>& sums) {
    Tile<float> frame = images.frame_in[slot], result = images.frame_out[slot];
    load_frame(i, frame);
    c.move_to(frame);
    launch_frame(slot);
    c.move_from(result);
    consume_frame(i, result, sums);
  }
};

SobelPipeline sobel_pipeline(Controller& c, SobelFrames& opened, int host_threads, int slots) {
  const Extent extent{std::size_t(opened.width), std::size_t(opened.height)};
  return SobelPipeline{.c = c,
                       .w = opened.width,
                       .h = opened.height,
                       .count = extent.count(),
                       .reader = std::move(opened.reader),
                       .writer = std::move(opened.writer),
                       .arena = host_arena(c.device().device, host_threads),
                       .kernels = sobel_kernels(c),
                       .images = sobel_images(c, extent, slots),
                       .range = stencil_range(opened.width, opened.height)};
}

}  // namespace

int count_y4m_frames(const std::string& path, int most) {
  Y4mReader reader(path);
  std::vector<float> frame(std::size_t(reader.width()) * std::size_t(reader.height()));
  int n = 0;
  while (n < most && reader.read_luma(frame.data())) ++n;
  return n;
}

SobelFrames open_sobel_frames(const SobelRun& run) {
  SobelFrames f{run.width, run.height, run.frames, nullptr, nullptr};
  if (!run.input.empty()) {
    // Only the frames the run reads are checked: a damaged frame after them is no reason to fail.
    const int available = count_y4m_frames(run.input, f.frames > 0 ? f.frames : INT_MAX);
    if (f.frames > available)
      throw UsageError("sobel: " + std::to_string(f.frames) + " frames asked for, but '" + run.input + "' holds " +
                       std::to_string(available));
    f.reader = std::make_shared<Y4mReader>(run.input);
    f.width = f.reader->width();
    f.height = f.reader->height();
    // A file's fault, not the command line's: a valid header with no frame after it.
    if (available == 0) throw Error("Y4M file '" + run.input + "': no frames after its header");
    f.frames = available;
  }
  if (f.width <= 0 || f.height <= 0 || f.frames <= 0)
    throw UsageError("sobel: width, height and frames must be positive (got " + std::to_string(f.width) + "x" +
                     std::to_string(f.height) + ", " + std::to_string(f.frames) + " frames)");
  if (!run.output.empty())
    f.writer = std::make_shared<Y4mWriter>(run.output, f.width, f.height,
                                           f.reader ? f.reader->timing_tags() : Y4mWriter::kDefaultTimingTags);
  return f;
}

RunResult sobel(Controller& c, const SobelRun& run) {
  SobelFrames opened = open_sobel_frames(run);
  const int frames = opened.frames;
  if (run.slots < 0) throw UsageError("sobel: --slots must be positive, got " + std::to_string(run.slots));
  const int slots = run.slots > 0 ? run.slots : kDefaultSobelSlots;
  SobelPipeline p = sobel_pipeline(c, opened, run.host_threads, slots);
  p.warm_up(slots);
  c.wait_all();

  std::vector<double> sums(std::size_t(frames), 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < frames; ++i) p.submit_frame(i, i % slots, sums);
  c.wait_all();
  RunResult r;
  r.seconds = seconds_since(t0);
  r.frames = frames;
  r.slots = slots;
  r.host_threads = p.arena->max_concurrency();
  r.checksum = ordered_sum(sums);
  const Tile<float>& last = p.images.frame_out[std::size_t((frames - 1) % slots)];
  r.output.assign(last.data(), last.data() + p.count);
  if (p.writer) p.writer->close();
  return r;
}

RunResult jacobi(Controller& c, int n, int iterations, int copy_every) {
  if (n <= 0 || iterations < 0 || copy_every <= 0)
    throw UsageError("jacobi: n and copy_every must be positive and iterations non-negative");
  const Extent extent{std::size_t(n), std::size_t(n)};
  const std::size_t count = extent.count();
  Kernel step = c.kernel("jacobi.cl", "jacobi_step", kBuildOptions);
  // The grids rotate, and there are enough of them that two consecutive snapshots never read the
  // same one: a snapshot lands in its grid's own host image, so with two grids and an even
  // copy_every each D2H would wait for the host sum of the snapshot before (WAR on the host image).
  // The hand-written version decouples them the same way with two separate snapshot buffers.
  int grids = 2;
  while (copy_every % grids == 0) ++grids;
  std::vector<Tile<float>> grid;
  for (int g = 0; g < grids; ++g) grid.push_back(c.tile<float>(extent, "grid" + std::to_string(g)));
  const Range range = stencil_range(n, n);
  for (int g = 0; g < grids; ++g) c.launch(step, range, in(grid[g]), out(grid[(g + 1) % grids]), n);  // warm-up
  c.wait_all();
  {
    std::vector<float> init;
    jacobi_initial_grid(init, n);
    std::copy(init.begin(), init.end(), grid[0].data());
  }

  std::vector<double> sums;
  sums.reserve(std::size_t(iterations / copy_every));
  const auto t0 = std::chrono::steady_clock::now();
  c.move_to(grid[0]);
  int cur = 0;
  for (int it = 0; it < iterations; ++it) {
    const int next = (cur + 1) % grids;
    c.launch(step, range, in(grid[cur]), out(grid[next]), n);
    cur = next;
    if ((it + 1) % copy_every != 0) continue;
    c.move_from(grid[cur]);
    sums.push_back(0.0);
    Tile<float> g = grid[cur];
    const std::size_t k = sums.size() - 1;
    c.host_task(
        "sum snapshot " + std::to_string(k), [g, count, &sums, k] { sums[k] = host_sum(g.data(), count); }, in(g));
  }
  if (iterations % copy_every != 0 || iterations == 0) c.move_from(grid[cur]);
  c.wait_all();
  RunResult r;
  r.seconds = seconds_since(t0);
  r.checksum = ordered_sum(sums);
  r.output.assign(grid[cur].data(), grid[cur].data() + count);
  return r;
}

RunResult matpow(Controller& c, int n, int products) {
  if (n <= 0 || products <= 0 || n % kMatmulTile != 0)
    throw UsageError("matpow: n must be a positive multiple of " + std::to_string(kMatmulTile) +
                     " and products positive (got n = " + std::to_string(n) +
                     ", products = " + std::to_string(products) + ")");
  const Extent extent{std::size_t(n), std::size_t(n)};
  const std::size_t count = extent.count();
  Kernel mm = c.kernel("matmul.cl", "matmul_tiled", kBuildOptions);
  auto a = c.tile<float>(extent, "A");
  Tile<float> p[2] = {c.tile<float>(extent, "P0"), c.tile<float>(extent, "P1")};
  const Range range = Range(std::size_t(n), std::size_t(n / kMatmulWpt)).local(kMatmulTile, kMatmulTile / kMatmulWpt);
  c.launch(mm, range, in(a), in(a), out(p[0]), n);  // warm-up
  c.wait_all();
  {
    std::vector<float> input;
    matpow_input(input, n);
    std::copy(input.begin(), input.end(), a.data());
  }

  std::vector<double> norms(std::size_t(products), 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  c.move_to(a);
  for (int k = 1; k <= products; ++k) {
    const int dst = (k - 1) % 2;
    c.launch(mm, range, in(k == 1 ? a : p[1 - dst]), in(a), out(p[dst]), n);
    c.move_from(p[dst]);
    Tile<float> pk = p[dst];
    c.host_task(
        "norm P" + std::to_string(k),
        [pk, count, &norms, k] { norms[std::size_t(k - 1)] = frobenius_norm(pk.data(), count); }, in(pk));
  }
  c.wait_all();
  RunResult r;
  r.seconds = seconds_since(t0);
  r.checksum = ordered_sum(norms);
  const Tile<float>& last = p[(products - 1) % 2];
  r.output.assign(last.data(), last.data() + count);
  return r;
}

}  // namespace hetflow::workloads
