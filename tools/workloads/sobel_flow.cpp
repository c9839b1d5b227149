#include "workloads/sobel_flow.hpp"

#include <hetflow/flow.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"
#include "workloads/sobel_sizing.hpp"

namespace hetflow::workloads {
namespace {

using namespace tbb::flow;
namespace hf = hetflow::flow;

// A frame's slots, as the imperative version's: the input image is held from generation until the
// first kernel has read it (there: until its H2D), the device intermediates from the first kernel
// to the last, the output image from the last kernel until it is consumed. A frame holding one slot
// of everything for its whole life needed twice the slots to keep the copy engines as busy (H200,
// bench_flow_graph: +22 % at 8K with 2).
struct InputSlot {
  Tile<float> in;
  int slot = 0;
};
struct WorkSlot {
  Tile<float> row_diff, row_smooth, gx, gy;
  int slot = 0;
};
struct OutputSlot {
  Tile<float> out;
  int slot = 0;
};
struct Frame : hf::Message {
  InputSlot input;
  WorkSlot work;
  OutputSlot output;
};

}  // namespace

RunResult sobel_flow_graph(Controller& c, const SobelRun& run, int slots) {
  if (slots < 1) throw UsageError("sobel_flow_graph: slots must be at least 1, got " + std::to_string(slots));
  SobelFrames opened = open_sobel_frames(run);
  const int width = opened.width, height = opened.height, frames = opened.frames;
  std::shared_ptr<Y4mReader> reader = std::move(opened.reader);
  std::shared_ptr<Y4mWriter> writer = std::move(opened.writer);

  const Extent extent{std::size_t(width), std::size_t(height)};
  const std::size_t count = extent.count();
  const int w = width, h = height;
  // Frame generation is a tbb::parallel_for: on the cores the device leaves, as the imperative version.
  const auto arena = host_arena(c.device().device, run.host_threads);
  const Range range = Range(round_up(std::size_t(w), kStencilLocal), round_up(std::size_t(h), kStencilLocal))
                          .local(kStencilLocal, kStencilLocal);
  auto kernel = [&](const char* name) { return c.kernel("sobel.cl", name, "-cl-kernel-arg-info"); };
  const Kernel rows_k = kernel("sobel_rows"), smooth_k = kernel("sobel_col_smooth"), diff_k = kernel("sobel_col_diff"),
               mag_k = kernel("sobel_magnitude");
  std::vector<InputSlot> inputs(static_cast<std::size_t>(slots));
  std::vector<WorkSlot> works(static_cast<std::size_t>(slots));
  std::vector<OutputSlot> outputs(static_cast<std::size_t>(slots));
  for (int s = 0; s < slots; ++s) {
    auto& i = inputs[std::size_t(s)];
    auto& f = works[std::size_t(s)];
    auto& o = outputs[std::size_t(s)];
    i.slot = f.slot = o.slot = s;
    const std::string n = std::to_string(s);
    i.in = c.tile<float>(extent, "frame" + n);
    o.out = c.tile<float>(extent, "edges" + n);
    f.row_diff = c.device_tile<float>(extent, "row_diff" + n);
    f.row_smooth = c.device_tile<float>(extent, "row_smooth" + n);
    f.gx = c.device_tile<float>(extent, "gx" + n);
    f.gy = c.device_tile<float>(extent, "gy" + n);
    // Warm-up (untimed), as the imperative version: every kernel once per slot.
    c.launch(rows_k, range, in(i.in), out(f.row_diff), out(f.row_smooth), w, h);
    c.launch(smooth_k, range, in(f.row_diff), out(f.gx), w, h);
    c.launch(diff_k, range, in(f.row_smooth), out(f.gy), w, h);
    c.launch(mag_k, range, in(f.gx), in(f.gy), out(o.out), w, h);
  }
  c.wait_all();

  std::vector<double> sums(std::size_t(frames), 0.0);
  std::vector<std::string> errors;
  RunResult result;
  int last_slot = 0;
  const auto t0 = std::chrono::steady_clock::now();

  graph g;
  // Each pool holds its slots; reserving joins hand a frame number an input slot, a loaded frame a
  // work slot, a frame before its last kernel an output slot, so at most `slots` frames hold each
  // kind and no tile is made per frame.
  buffer_node<InputSlot> input_pool(g);
  buffer_node<WorkSlot> work_pool(g);
  buffer_node<OutputSlot> output_pool(g);
  input_node<std::uint64_t> numbers(g,
                                    [i = std::uint64_t{0}, n = std::uint64_t(frames)](tbb::flow_control& fc) mutable {
                                      if (i == n) fc.stop();
                                      return i++;
                                    });
  join_node<std::tuple<std::uint64_t, InputSlot>, reserving> take_input(g);
  function_node<std::tuple<std::uint64_t, InputSlot>, Frame> label(g, serial,
                                                                   [](const std::tuple<std::uint64_t, InputSlot>& t) {
                                                                     Frame f;
                                                                     f.seq = std::get<0>(t);
                                                                     f.input = std::get<1>(t);
                                                                     return f;
                                                                   });
  // A .y4m stream is read in frame order: one body at a time, in arrival order (the label is serial).
  hf::host_node<Frame> load(
      g, c, [](const Frame& f) { return hf::touch(out(f.input.in)); },
      [reader, w, h, arena](Frame& f) {
        if (!reader)
          arena->execute([&] { generate_frame(f.input.in.data(), w, h, int(f.seq)); });  // as the imperative version
        else if (!reader->read_luma(f.input.in.data()))
          throw Error("input ended before frame " + std::to_string(f.seq));
      },
      {.name = "load", .concurrency = reader ? std::size_t(1) : std::size_t(unlimited)});
  queue_node<Frame> loaded(g), filtered(g);  // a reserving join pulls from a buffer, not from a node that pushes
  join_node<std::tuple<Frame, WorkSlot>, reserving> take_work(g);
  // A frame joined with a slot of one pool, stored in its member `held`.
  auto with_slot = [](auto Frame::*held) {
    return [held](const auto& t) {
      Frame f = std::get<0>(t);
      f.*held = std::get<1>(t);
      return f;
    };
  };
  // A slot of one pool given back by a frame that has done with it; the frame goes on.
  auto give_back = [](auto& pool, auto Frame::*held) {
    return [&pool, held](const Frame& f) {
      pool.try_put(f.*held);
      return f;
    };
  };
  function_node<std::tuple<Frame, WorkSlot>, Frame> with_work(g, serial, with_slot(&Frame::work));
  hf::kernel_node<Frame> rows(g, c, rows_k, [&](const Frame& f) {
    return hf::launch(range, in(f.input.in), out(f.work.row_diff), out(f.work.row_smooth), w, h);
  });
  // The first kernel has read the input image: its slot can take the next frame.
  function_node<Frame, Frame> input_done(g, serial, give_back(input_pool, &Frame::input));
  hf::kernel_node<Frame> smooth(
      g, c, smooth_k, [&](const Frame& f) { return hf::launch(range, in(f.work.row_diff), out(f.work.gx), w, h); });
  hf::kernel_node<Frame> diff(
      g, c, diff_k, [&](const Frame& f) { return hf::launch(range, in(f.work.row_smooth), out(f.work.gy), w, h); });
  join_node<std::tuple<Frame, OutputSlot>, reserving> take_output(g);
  function_node<std::tuple<Frame, OutputSlot>, Frame> with_output(g, serial, with_slot(&Frame::output));
  hf::kernel_node<Frame> magnitude(g, c, mag_k, [&](const Frame& f) {
    return hf::launch(range, in(f.work.gx), in(f.work.gy), out(f.output.out), w, h);
  });
  function_node<Frame, Frame> work_done(g, serial, give_back(work_pool, &Frame::work));
  hf::host_node<Frame> consume(
      g, c, [](const Frame& f) { return hf::touch(in(f.output.out)); },
      [&, count](Frame& f) {
        arena->execute([&] { sums[f.seq] = host_sum(f.output.out.data(), count); });
        if (f.seq + 1 == std::uint64_t(frames)) last_slot = f.output.slot;
      },
      {.name = "consume"});
  // The writer needs frame order back: a sequencer, then one body at a time. Frames also take their
  // output slots in order then: frames after one still in the kernels could otherwise hold every
  // output slot while waiting for it at the writer's sequencer, and it would never get one.
  sequencer_node<Frame> in_order(g, [](const Frame& f) { return f.seq; });
  sequencer_node<Frame> to_output_in_order(g, [](const Frame& f) { return f.seq; });
  hf::host_node<Frame> write(
      g, c, [](const Frame& f) { return hf::touch(in(f.output.out)); },
      [writer](Frame& f) {
        if (writer) writer->write_luma(f.output.out.data());
      },
      {.name = "write", .concurrency = 1});
  // A failed frame (its load threw, a kernel failed) passes the later nodes as failed, so it gives
  // all its slots back on the way. The last frame keeps its output slot: frames reach the output
  // pool out of order, and an earlier one taking that slot after it would overwrite the result (the
  // others never wait on it, as at least one more slot stays in the pool while a frame is before
  // it, since with one slot frames go through in order).
  int recycled = 0;
  function_node<Frame> recycle(g, serial, [&](const Frame& f) {
    ++recycled;
    if (f.failed()) errors.push_back("frame " + std::to_string(f.seq) + ": " + f.error);
    if (f.seq + 1 != std::uint64_t(frames)) output_pool.try_put(f.output);
  });

  make_edge(numbers, input_port<0>(take_input));
  make_edge(input_pool, input_port<1>(take_input));
  make_edge(take_input, label);
  make_edge(label, load);
  make_edge(load, loaded);
  make_edge(loaded, input_port<0>(take_work));
  make_edge(work_pool, input_port<1>(take_work));
  make_edge(take_work, with_work);
  make_edge(with_work, rows);
  make_edge(rows, input_done);
  make_edge(input_done, smooth);
  make_edge(smooth, diff);
  if (writer) {
    make_edge(diff, to_output_in_order);
    make_edge(to_output_in_order, input_port<0>(take_output));
  } else {
    make_edge(diff, filtered);
    make_edge(filtered, input_port<0>(take_output));
  }
  make_edge(output_pool, input_port<1>(take_output));
  make_edge(take_output, with_output);
  make_edge(with_output, magnitude);
  make_edge(magnitude, work_done);
  make_edge(work_done, consume);
  if (writer) {  // only a .y4m stream needs the frames back in order
    make_edge(consume, in_order);
    make_edge(in_order, write);
    make_edge(write, recycle);
  } else {
    make_edge(consume, recycle);
  }
  for (auto& i : inputs) input_pool.try_put(i);
  for (auto& f : works) work_pool.try_put(f);
  for (auto& o : outputs) output_pool.try_put(o);
  numbers.activate();
  g.wait_for_all();
  c.wait_all();

  // A frame that never came out is a graph that stalled (every slot held by frames waiting for one
  // another): never a run that looks complete.
  if (recycled != frames)
    throw Error("sobel flow graph: only " + std::to_string(recycled) + " of " + std::to_string(frames) +
                " frames came out; the graph stalled");
  if (!errors.empty())
    throw Error("sobel flow graph: " + std::to_string(errors.size()) + " frame(s) failed; " + errors[0]);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Outside the timed loop, as the imperative version: a fresh 530 MB vector costs 0.4 s of page
  // faults at 16K (the first flow-graph trace on the H200 had it in the last frame's consumer).
  const Tile<float>& last = outputs[std::size_t(last_slot)].out;
  result.output.assign(last.data(), last.data() + count);
  result.frames = frames;
  result.slots = slots;
  result.host_threads = arena->max_concurrency();
  for (double s : sums) result.checksum += s;
  if (writer) writer->close();
  return result;
}

}  // namespace hetflow::workloads
