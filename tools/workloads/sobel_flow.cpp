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

struct SobelKernels {
  Kernel rows, smooth, diff, magnitude;
};

SobelKernels sobel_kernels(Controller& c) {
  auto kernel = [&](const char* name) { return c.kernel("sobel.cl", name, "-cl-kernel-arg-info"); };
  return {kernel("sobel_rows"), kernel("sobel_col_smooth"), kernel("sobel_col_diff"), kernel("sobel_magnitude")};
}

// What the graph's bodies share: the run's geometry and kernels, and what the frames leave behind.
struct SobelJob {
  SobelJob(Controller& controller, SobelFrames opened, int host_threads)
      : c(controller),
        w(opened.width),
        h(opened.height),
        frames(opened.frames),
        count(Extent{std::size_t(w), std::size_t(h)}.count()),
        reader(std::move(opened.reader)),
        writer(std::move(opened.writer)),
        // Frame generation is a tbb::parallel_for: on the cores the device leaves, as the imperative version.
        arena(host_arena(c.device().device, host_threads)),
        range(Range(round_up(std::size_t(w), kStencilLocal), round_up(std::size_t(h), kStencilLocal))
                  .local(kStencilLocal, kStencilLocal)),
        kernels(sobel_kernels(c)),
        sums(std::size_t(frames), 0.0) {}

  Controller& c;
  const int w, h, frames;
  const std::size_t count;
  const std::shared_ptr<Y4mReader> reader;
  const std::shared_ptr<Y4mWriter> writer;
  const std::shared_ptr<tbb::task_arena> arena;
  const Range range;
  const SobelKernels kernels;
  std::vector<double> sums;
  std::vector<std::string> errors;
  int last_slot = 0;
  int recycled = 0;
};

struct FrameSlots {
  std::vector<InputSlot> inputs;
  std::vector<WorkSlot> works;
  std::vector<OutputSlot> outputs;
};

void launch_warm_up(SobelJob& job, const InputSlot& i, const WorkSlot& f, const OutputSlot& o) {
  const SobelKernels& k = job.kernels;
  job.c.launch(k.rows, job.range, in(i.in), out(f.row_diff), out(f.row_smooth), job.w, job.h);
  job.c.launch(k.smooth, job.range, in(f.row_diff), out(f.gx), job.w, job.h);
  job.c.launch(k.diff, job.range, in(f.row_smooth), out(f.gy), job.w, job.h);
  job.c.launch(k.magnitude, job.range, in(f.gx), in(f.gy), out(o.out), job.w, job.h);
}

FrameSlots make_slots(SobelJob& job, int slots) {
  const Extent extent{std::size_t(job.w), std::size_t(job.h)};
  FrameSlots made{std::vector<InputSlot>(static_cast<std::size_t>(slots)),
                  std::vector<WorkSlot>(static_cast<std::size_t>(slots)),
                  std::vector<OutputSlot>(static_cast<std::size_t>(slots))};
  for (int s = 0; s < slots; ++s) {
    auto& i = made.inputs[std::size_t(s)];
    auto& f = made.works[std::size_t(s)];
    auto& o = made.outputs[std::size_t(s)];
    i.slot = f.slot = o.slot = s;
    const std::string n = std::to_string(s);
    i.in = job.c.tile<float>(extent, "frame" + n);
    o.out = job.c.tile<float>(extent, "edges" + n);
    f.row_diff = job.c.device_tile<float>(extent, "row_diff" + n);
    f.row_smooth = job.c.device_tile<float>(extent, "row_smooth" + n);
    f.gx = job.c.device_tile<float>(extent, "gx" + n);
    f.gy = job.c.device_tile<float>(extent, "gy" + n);
    // Warm-up (untimed), as the imperative version: every kernel once per slot.
    launch_warm_up(job, i, f, o);
  }
  return made;
}

// Each pool holds its slots; reserving joins hand a frame number an input slot, a loaded frame a
// work slot, a frame before its last kernel an output slot, so at most `slots` frames hold each
// kind and no tile is made per frame.
struct SlotPools {
  buffer_node<InputSlot> input;
  buffer_node<WorkSlot> work;
  buffer_node<OutputSlot> output;

  explicit SlotPools(graph& g) : input(g), work(g), output(g) {}
  void fill(const FrameSlots& slots) {
    for (auto& i : slots.inputs) input.try_put(i);
    for (auto& f : slots.works) work.try_put(f);
    for (auto& o : slots.outputs) output.try_put(o);
  }
};

// A frame joined with a slot of one pool, stored in its member `held`.
template <class Slot>
auto with_slot(Slot Frame::*held) {
  return [held](const std::tuple<Frame, Slot>& t) {
    Frame f = std::get<0>(t);
    f.*held = std::get<1>(t);
    return f;
  };
}

// A slot of one pool given back by a frame that has done with it; the frame goes on.
template <class Slot>
auto give_back(buffer_node<Slot>& pool, Slot Frame::*held) {
  return [&pool, held](const Frame& f) {
    pool.try_put(f.*held);
    return f;
  };
}

auto load_frame(const SobelJob& job) {
  return [reader = job.reader, w = job.w, h = job.h, arena = job.arena](Frame& f) {
    if (!reader)
      arena->execute([&] { generate_frame(f.input.in.data(), w, h, int(f.seq)); });  // as the imperative version
    else if (!reader->read_luma(f.input.in.data()))
      throw Error("input ended before frame " + std::to_string(f.seq));
  };
}

struct FrameIntake {
  input_node<std::uint64_t> numbers;
  join_node<std::tuple<std::uint64_t, InputSlot>, reserving> take_input;
  function_node<std::tuple<std::uint64_t, InputSlot>, Frame> label;
  hf::host_node<Frame> load;
  queue_node<Frame> loaded;  // a reserving join pulls from a buffer, not from a node that pushes
  join_node<std::tuple<Frame, WorkSlot>, reserving> take_work;
  function_node<std::tuple<Frame, WorkSlot>, Frame> with_work;

  FrameIntake(graph& g, SobelJob& job)
      : numbers(g,
                [i = std::uint64_t{0}, n = std::uint64_t(job.frames)](tbb::flow_control& fc) mutable {
                  if (i == n) fc.stop();
                  return i++;
                }),
        take_input(g),
        label(g, serial,
              [](const std::tuple<std::uint64_t, InputSlot>& t) {
                Frame f;
                f.seq = std::get<0>(t);
                f.input = std::get<1>(t);
                return f;
              }),
        // One body at a time, in arrival order (the label is serial): a .y4m stream is read in frame
        // order, and generated frames take turns with the whole host arena, as the imperative version's
        // do — several generations at once share it and all end late (perf/RESULTS.md, 2026-11-26 17:05Z).
        load(g, job.c, [](const Frame& f) { return hf::touch(out(f.input.in)); }, load_frame(job),
             {.name = "load", .concurrency = 1}),
        loaded(g),
        take_work(g),
        with_work(g, serial, with_slot(&Frame::work)) {}
};

struct KernelChain {
  hf::kernel_node<Frame> rows;
  // The first kernel has read the input image: its slot can take the next frame.
  function_node<Frame, Frame> input_done;
  hf::kernel_node<Frame> smooth, diff;
  queue_node<Frame> filtered;  // a reserving join pulls from a buffer, not from a node that pushes
  join_node<std::tuple<Frame, OutputSlot>, reserving> take_output;
  function_node<std::tuple<Frame, OutputSlot>, Frame> with_output;
  hf::kernel_node<Frame> magnitude;
  function_node<Frame, Frame> work_done;

  KernelChain(graph& g, SobelJob& job, SlotPools& pools)
      : rows(g, job.c, job.kernels.rows,
             [&job](const Frame& f) {
               return hf::launch(job.range, in(f.input.in), out(f.work.row_diff), out(f.work.row_smooth), job.w, job.h);
             }),
        input_done(g, serial, give_back(pools.input, &Frame::input)),
        smooth(g, job.c, job.kernels.smooth,
               [&job](const Frame& f) {
                 return hf::launch(job.range, in(f.work.row_diff), out(f.work.gx), job.w, job.h);
               }),
        diff(g, job.c, job.kernels.diff,
             [&job](const Frame& f) {
               return hf::launch(job.range, in(f.work.row_smooth), out(f.work.gy), job.w, job.h);
             }),
        filtered(g),
        take_output(g),
        with_output(g, serial, with_slot(&Frame::output)),
        magnitude(g, job.c, job.kernels.magnitude,
                  [&job](const Frame& f) {
                    return hf::launch(job.range, in(f.work.gx), in(f.work.gy), out(f.output.out), job.w, job.h);
                  }),
        work_done(g, serial, give_back(pools.work, &Frame::work)) {}
};

// The writer needs frame order back: a sequencer, then one body at a time. Frames also take their
// output slots in order then: frames after one still in the kernels could otherwise hold every
// output slot while waiting for it at the writer's sequencer, and it would never get one.
struct FrameOrder {
  sequencer_node<Frame> in_order, to_output_in_order;

  explicit FrameOrder(graph& g)
      : in_order(g, [](const Frame& f) { return f.seq; }),
        to_output_in_order(g, [](const Frame& f) { return f.seq; }) {}
};

// A failed frame (its load threw, a kernel failed) passes the later nodes as failed, so it gives
// all its slots back on the way. The last frame keeps its output slot: frames reach the output
// pool out of order, and an earlier one taking that slot after it would overwrite the result (the
// others never wait on it, as at least one more slot stays in the pool while a frame is before
// it, since with one slot frames go through in order).
auto recycle_frame(SobelJob& job, buffer_node<OutputSlot>& output_pool) {
  return [&job, &output_pool](const Frame& f) {
    ++job.recycled;
    if (f.failed()) job.errors.push_back("frame " + std::to_string(f.seq) + ": " + f.error);
    if (f.seq + 1 != std::uint64_t(job.frames)) output_pool.try_put(f.output);
  };
}

struct FrameOutlet {
  hf::host_node<Frame> consume;
  hf::host_node<Frame> write;
  function_node<Frame> recycle;

  FrameOutlet(graph& g, SobelJob& job, SlotPools& pools)
      : consume(
            g, job.c, [](const Frame& f) { return hf::touch(in(f.output.out)); },
            [&job](Frame& f) {
              job.arena->execute([&] { job.sums[f.seq] = host_sum(f.output.out.data(), job.count); });
              if (f.seq + 1 == std::uint64_t(job.frames)) job.last_slot = f.output.slot;
            },
            {.name = "consume", .concurrency = 1}),  // the sums take turns too, as the imperative version's
        write(
            g, job.c, [](const Frame& f) { return hf::touch(in(f.output.out)); },
            [writer = job.writer](Frame& f) {
              if (writer) writer->write_luma(f.output.out.data());
            },
            {.name = "write", .concurrency = 1}),
        recycle(g, serial, recycle_frame(job, pools.output)) {}
};

void connect(SlotPools& pools, FrameIntake& intake, KernelChain& kernels, FrameOrder& order, FrameOutlet& outlet,
             bool has_writer) {
  make_edge(intake.numbers, input_port<0>(intake.take_input));
  make_edge(pools.input, input_port<1>(intake.take_input));
  make_edge(intake.take_input, intake.label);
  make_edge(intake.label, intake.load);
  make_edge(intake.load, intake.loaded);
  make_edge(intake.loaded, input_port<0>(intake.take_work));
  make_edge(pools.work, input_port<1>(intake.take_work));
  make_edge(intake.take_work, intake.with_work);
  make_edge(intake.with_work, kernels.rows);
  make_edge(kernels.rows, kernels.input_done);
  make_edge(kernels.input_done, kernels.smooth);
  make_edge(kernels.smooth, kernels.diff);
  if (has_writer) {
    make_edge(kernels.diff, order.to_output_in_order);
    make_edge(order.to_output_in_order, input_port<0>(kernels.take_output));
  } else {
    make_edge(kernels.diff, kernels.filtered);
    make_edge(kernels.filtered, input_port<0>(kernels.take_output));
  }
  make_edge(pools.output, input_port<1>(kernels.take_output));
  make_edge(kernels.take_output, kernels.with_output);
  make_edge(kernels.with_output, kernels.magnitude);
  make_edge(kernels.magnitude, kernels.work_done);
  make_edge(kernels.work_done, outlet.consume);
  if (has_writer) {  // only a .y4m stream needs the frames back in order
    make_edge(outlet.consume, order.in_order);
    make_edge(order.in_order, outlet.write);
    make_edge(outlet.write, outlet.recycle);
  } else {
    make_edge(outlet.consume, outlet.recycle);
  }
}

void run_graph(SobelJob& job, const FrameSlots& slots) {
  graph g;
  SlotPools pools(g);
  FrameIntake intake(g, job);
  KernelChain kernels(g, job, pools);
  FrameOrder order(g);
  FrameOutlet outlet(g, job, pools);
  connect(pools, intake, kernels, order, outlet, job.writer != nullptr);
  pools.fill(slots);
  intake.numbers.activate();
  g.wait_for_all();
  job.c.wait_all();
}

// A frame that never came out is a graph that stalled (every slot held by frames waiting for one
// another): never a run that looks complete.
void check_every_frame_came_out(const SobelJob& job) {
  if (job.recycled != job.frames)
    throw Error("sobel flow graph: only " + std::to_string(job.recycled) + " of " + std::to_string(job.frames) +
                " frames came out; the graph stalled");
  if (!job.errors.empty())
    throw Error("sobel flow graph: " + std::to_string(job.errors.size()) + " frame(s) failed; " + job.errors[0]);
}

RunResult collect_result(const SobelJob& job, const FrameSlots& slots, double seconds) {
  RunResult result;
  result.seconds = seconds;
  // Outside the timed loop, as the imperative version: a fresh 530 MB vector costs 0.4 s of page
  // faults at 16K (the first flow-graph trace on the H200 had it in the last frame's consumer).
  const Tile<float>& last = slots.outputs[std::size_t(job.last_slot)].out;
  result.output.assign(last.data(), last.data() + job.count);
  result.frames = job.frames;
  result.slots = int(slots.outputs.size());
  result.host_threads = job.arena->max_concurrency();
  for (double s : job.sums) result.checksum += s;
  if (job.writer) job.writer->close();
  return result;
}

}  // namespace

RunResult sobel_flow_graph(Controller& c, const SobelRun& run, int slots) {
  if (slots < 1) throw UsageError("sobel_flow_graph: slots must be at least 1, got " + std::to_string(slots));
  SobelJob job(c, open_sobel_frames(run), run.host_threads);
  const FrameSlots frame_slots = make_slots(job, slots);
  c.wait_all();

  const auto t0 = std::chrono::steady_clock::now();
  run_graph(job, frame_slots);
  check_every_frame_came_out(job);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return collect_result(job, frame_slots, seconds);
}

}  // namespace hetflow::workloads
