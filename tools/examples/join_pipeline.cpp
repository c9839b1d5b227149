// A two-branch pipeline in your own oneTBB flow graph (README, "Pipelines in your own oneTBB flow
// graph"; docs/flow-nodes.md). Each message is a block of samples: a host node fills it, two kernel
// nodes split it on the device at the same time into a smooth part and a detail part, a join puts the
// branches back together, and a host node checks both parts against the same arithmetic on the CPU.
// A limiter_node keeps at most K blocks in flight, so at most K blocks' tiles exist at once: each
// block's tiles are made when it enters and freed when its message is dropped at the end.
//
//   join_pipeline [blocks = 64] [samples per block = 65536] [blocks in flight = 4]
//
// Exit status 0 when every block came out equal to the CPU's, 1 otherwise (what went wrong is printed).
#include <hetflow/flow.hpp>
#include <hetflow/hetflow.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace hf = hetflow::flow;
using namespace tbb::flow;
using hetflow::Tile;

namespace {

struct Block : hf::Message {
  Tile<float> x, smooth, detail;
};

// Weights that are powers of two and no contraction, so the device and the CPU round alike.
const char* const kKernels = R"CL(
#pragma OPENCL FP_CONTRACT OFF
float smoothed(__global const float* x, int i, int n) {
  const float left = x[i > 0 ? i - 1 : i], right = x[i + 1 < n ? i + 1 : i];
  return 0.25f * left + 0.5f * x[i] + 0.25f * right;
}
__kernel void smooth(__global const float* x, __global float* lo, int n) {
  const int i = get_global_id(0);
  if (i < n) lo[i] = smoothed(x, i, n);
}
__kernel void detail(__global const float* x, __global float* hi, int n) {
  const int i = get_global_id(0);
  if (i < n) hi[i] = x[i] - smoothed(x, i, n);
}
)CL";

float smoothed(const float* x, int i, int n) {
  const float left = x[i > 0 ? i - 1 : i], right = x[i + 1 < n ? i + 1 : i];
  return 0.25f * left + 0.5f * x[i] + 0.25f * right;
}

float sample(std::uint64_t block, int i) {
  return float((block * 7919u + std::uint64_t(i) * 104729u) % 1000u) * 0.125f;
}

int positive_arg(int argc, char** argv, int index, int fallback) {
  if (argc <= index) return fallback;
  char* end = nullptr;
  const long v = std::strtol(argv[index], &end, 10);
  if (*end != '\0' || v < 1 || v > (1 << 26))
    throw hetflow::UsageError(std::string("argument ") + std::to_string(index) + " must be a count from 1 to " +
                              std::to_string(1 << 26) + ", got '" + argv[index] + "'");
  return int(v);
}

}  // namespace

int main(int argc, char** argv) try {
  const int blocks = positive_arg(argc, argv, 1, 64), n = positive_arg(argc, argv, 2, 65536),
            in_flight = positive_arg(argc, argv, 3, 4);
  hetflow::Controller c;
  const hetflow::Kernel smooth_k = c.kernel_from_source(kKernels, "smooth"),
                        detail_k = c.kernel_from_source(kKernels, "detail");
  const hetflow::Range range(static_cast<std::size_t>(n));

  std::atomic<int> entered{0}, most_in_flight{0}, wrong_blocks{0}, came_out{0};
  std::mutex m;
  std::vector<std::string> failures;

  graph g;
  input_node<Block> source(g, [&, next = std::uint64_t{0}](tbb::flow_control& fc) mutable {
    Block b;
    if (next == std::uint64_t(blocks)) {
      fc.stop();
      return b;
    }
    b.seq = next++;
    const std::string id = std::to_string(b.seq);
    b.x = c.tile<float>(std::size_t(n), "x" + id);
    b.smooth = c.tile<float>(std::size_t(n), "smooth" + id);
    b.detail = c.tile<float>(std::size_t(n), "detail" + id);
    return b;
  });
  limiter_node<Block> limit(g, std::size_t(in_flight));
  function_node<Block, Block> enter(g, unlimited, [&](const Block& b) {
    const int now = ++entered;
    for (int seen = most_in_flight.load(); now > seen && !most_in_flight.compare_exchange_weak(seen, now);) {
    }
    return b;
  });
  hf::host_node<Block> fill(
      g, c, [](const Block& b) { return hf::touch(out(b.x)); },
      [n](Block& b) {
        for (int i = 0; i < n; ++i) b.x[std::size_t(i)] = sample(b.seq, i);
      },
      {.name = "fill"});
  // Both read b.x: the first one to run moves it to the device, the other waits for that copy only.
  hf::kernel_node<Block> smooth(
      g, c, smooth_k, [&](const Block& b) { return hf::launch(range, in(b.x), out(b.smooth), n); }, {.name = "smooth"});
  hf::kernel_node<Block> detail(
      g, c, detail_k, [&](const Block& b) { return hf::launch(range, in(b.x), out(b.detail), n); }, {.name = "detail"});
  join_node<std::tuple<Block, Block>, key_matching<std::uint64_t>> both(
      g, [](const Block& b) { return b.seq; }, [](const Block& b) { return b.seq; });
  // One message again, keeping a failure of either branch.
  function_node<std::tuple<Block, Block>, Block> merge(
      g, unlimited, [](const std::tuple<Block, Block>& t) { return hf::merge(std::get<0>(t), std::get<1>(t)); });
  hf::host_node<Block> check(
      g, c, [](const Block& b) { return hf::touch(in(b.x), in(b.smooth), in(b.detail)); },  // brings both parts back
      [n, &wrong_blocks](Block& b) {
        for (int i = 0; i < n; ++i) {
          const float lo = smoothed(b.x.data(), i, n);
          if (b.smooth[std::size_t(i)] != lo || b.detail[std::size_t(i)] != b.x[std::size_t(i)] - lo) {
            ++wrong_blocks;
            return;
          }
        }
      },
      {.name = "check"});
  function_node<Block, continue_msg> leave(g, serial, [&](const Block& b) {
    --entered;
    ++came_out;
    if (b.failed()) {
      std::lock_guard lock(m);
      failures.push_back("block " + std::to_string(b.seq) + ": " + b.error);
    }
    return continue_msg{};  // the block's tiles go with this message; the limiter lets the next one in
  });

  make_edge(source, limit);
  make_edge(limit, enter);
  make_edge(enter, fill);
  make_edge(fill, smooth);
  make_edge(fill, detail);
  make_edge(smooth, input_port<0>(both));
  make_edge(detail, input_port<1>(both));
  make_edge(both, merge);
  make_edge(merge, check);
  make_edge(check, leave);
  make_edge(leave, limit.decrementer());
  source.activate();
  g.wait_for_all();  // returns once the device work is done too

  const bool good = came_out == blocks && failures.empty() && wrong_blocks == 0;
  std::printf("join_pipeline on %s: %d of %d blocks of %d samples came out, at most %d in flight (limit %d); %s\n",
              c.device().name.c_str(), came_out.load(), blocks, n, most_in_flight.load(), in_flight,
              good ? "every block equal to the CPU's" : "FAILED");
  if (wrong_blocks > 0) std::printf("  %d block(s) differ from the CPU's\n", wrong_blocks.load());
  for (const auto& f : failures) std::printf("  %s\n", f.c_str());
  return good ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "join_pipeline: %s\n", e.what());
  return 1;
}
