// Flow-graph nodes under the sync policy with one TBB worker (or none): nothing deadlocks. A node
// whose implicit transfer blocked its thread while holding the lock that decides residency
// (graph_nodes/flow_nodes.cpp) left other nodes' bodies waiting for it, and on a 2-core machine the
// flow-graph Sobel hung (1 run in ~30 under AddressSanitizer in CI, 2026-11-24); a node that blocked
// after it hung with no worker at all (2026-11-27). Nodes now never wait in their bodies.
#include <hetflow/flow.hpp>

#include <tbb/global_control.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "support.hpp"
#include "workloads/pipelines.hpp"
#include "workloads/sobel_flow.hpp"

using namespace hetflow;
using namespace tbb::flow;
namespace hf = hetflow::flow;

namespace {

struct Pair : hf::Message {
  std::uint64_t seq = 0;
  Tile<float> a, b;
};

// A hang must fail the suite rather than stall it until ctest's timeout: after `limit` the process
// exits naming what it was doing.
class Deadline {
 public:
  explicit Deadline(std::chrono::seconds limit, const char* what) : what_(what) {
    thread_ = std::thread([this, limit] {
      std::unique_lock lock(m_);
      if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
        std::fprintf(stderr, "deadlock: %s did not finish within %lld s\n", what_,
                     static_cast<long long>(limit.count()));
        std::_Exit(3);
      }
    });
  }
  ~Deadline() {
    {
      std::lock_guard lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  const char* what_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

TEST_CASE("under sync with one TBB worker, two kernel branches with implicit transfers never deadlock") {
  // The main thread and one worker: what a 2-core CI machine has.
  tbb::global_control one_worker(tbb::global_control::max_allowed_parallelism, 2);
  Controller c(test::options(Policy::sync));
  auto kernel = c.kernel("hetflow_test.cl", "scale_in_place");
  const int N = 60;
  const std::size_t len = 4096;
  Deadline deadline(std::chrono::seconds(240), "a sync flow graph of two kernel branches on one worker");
  graph g;
  input_node<Pair> source(g, [&, i = std::uint64_t{0}](tbb::flow_control& fc) mutable {
    if (i == N) fc.stop();
    Pair p;
    p.seq = i++;
    const std::string n = std::to_string(p.seq);
    p.a = c.tile<float>(len, "a" + n);
    p.b = c.tile<float>(len, "b" + n);
    return p;
  });
  limiter_node<Pair> in_flight(g, 4);
  hf::host_node<Pair> fill(
      g, c, [](const Pair& p) { return hf::touch(out(p.a), out(p.b)); },
      [](Pair& p) {
        test::fill(p.a, float(p.seq));
        test::fill(p.b, 2.0f * float(p.seq));
      },
      {.name = "fill"});
  // Both branches move their tile to the device (implicit H2D, blocking under sync) and back.
  hf::kernel_node<Pair> left(
      g, c, kernel, [&](const Pair& p) { return hf::launch(Range(len), io(p.a), int(len), 2.0f); }, {.name = "left"});
  hf::kernel_node<Pair> right(
      g, c, kernel, [&](const Pair& p) { return hf::launch(Range(len), io(p.b), int(len), 3.0f); }, {.name = "right"});
  join_node<std::tuple<Pair, Pair>, key_matching<std::uint64_t>> both(
      g, [](const Pair& p) { return p.seq; }, [](const Pair& p) { return p.seq; });
  function_node<std::tuple<Pair, Pair>, Pair> merge(
      g, unlimited, [](const auto& t) { return hf::merge(std::get<0>(t), std::get<1>(t)); });
  std::atomic<int> wrong{0}, failed{0}, out{0};
  hf::host_node<Pair> check(
      g, c, [](const Pair& p) { return hf::touch(in(p.a), in(p.b)); },
      [&](Pair& p) {
        if (!test::all_equal(p.a, float(p.seq) * 2.0f + 1.0f) ||
            !test::all_equal(p.b, 2.0f * float(p.seq) * 3.0f + 1.0f))
          ++wrong;
      },
      {.name = "check"});
  function_node<Pair, continue_msg> sink(g, serial, [&](const Pair& p) {
    if (!p.error.empty()) ++failed;
    ++out;
    return continue_msg{};
  });
  make_edge(source, in_flight);
  make_edge(in_flight, fill);
  make_edge(fill, left);
  make_edge(fill, right);
  make_edge(left, input_port<0>(both));
  make_edge(right, input_port<1>(both));
  make_edge(both, merge);
  make_edge(merge, check);
  make_edge(check, sink);
  make_edge(sink, in_flight.decrementer());
  source.activate();
  g.wait_for_all();
  c.wait_all();
  CHECK(out.load() == N);
  CHECK(failed.load() == 0);
  CHECK(wrong.load() == 0);
}

// A node's body blocked on its implicit transfers under sync: with oneTBB limited to one thread (no
// worker at all), or two graphs on one controller each waited for from a thread of its own, the
// pipeline hung (a user's program, 2026-11-27). Nodes no longer wait in their bodies.
TEST_CASE("under sync, a pipeline with no TBB worker at all, and two graphs waited for from two threads, finish") {
  Controller c(test::options(Policy::sync));
  auto kernel = c.kernel("hetflow_test.cl", "scale_in_place");
  const std::size_t len = 4096;
  // One pipeline: host_node fill → kernel_node (implicit H2D) → host_node check (implicit D2H).
  auto run = [&](int messages, std::atomic<int>& wrong, std::atomic<int>& ended) {
    graph g;
    input_node<Pair> source(g, [&, i = std::uint64_t{0}](tbb::flow_control& fc) mutable {
      if (i == std::uint64_t(messages)) fc.stop();
      Pair p;
      p.seq = i++;
      p.a = c.tile<float>(len, "a" + std::to_string(p.seq));
      return p;
    });
    limiter_node<Pair> in_flight(g, 3);
    hf::host_node<Pair> fill(
        g, c, [](const Pair& p) { return hf::touch(out(p.a)); }, [](Pair& p) { test::fill(p.a, float(p.seq)); },
        {.name = "fill"});
    hf::kernel_node<Pair> scale(g, c, kernel,
                                [&](const Pair& p) { return hf::launch(Range(len), io(p.a), int(len), 2.0f); },
                                {.name = "scale"});
    hf::host_node<Pair> check(
        g, c, [](const Pair& p) { return hf::touch(in(p.a)); },
        [&](Pair& p) {
          if (!p.failed() && !test::all_equal(p.a, float(p.seq) * 2.0f + 1.0f)) ++wrong;
          if (p.failed()) ++wrong;
          ++ended;
        },
        {.name = "check"});
    function_node<Pair, continue_msg> back(g, serial, [](const Pair&) { return continue_msg{}; });
    make_edge(source, in_flight);
    make_edge(in_flight, fill);
    make_edge(fill, scale);
    make_edge(scale, check);
    make_edge(check, back);
    make_edge(back, in_flight.decrementer());
    source.activate();
    g.wait_for_all();
  };
  {
    Deadline deadline(std::chrono::seconds(120), "a sync pipeline with oneTBB limited to one thread");
    tbb::global_control no_worker(tbb::global_control::max_allowed_parallelism, 1);
    std::atomic<int> wrong{0}, ended{0};
    run(40, wrong, ended);
    CHECK(ended.load() == 40);
    CHECK(wrong.load() == 0);
  }
  {
    Deadline deadline(std::chrono::seconds(120), "two sync pipelines on one controller, waited for from two threads");
    std::atomic<int> wrong{0}, ended{0};
    std::thread first([&] { run(40, wrong, ended); });
    std::thread second([&] { run(40, wrong, ended); });
    first.join();
    second.join();
    CHECK(ended.load() == 80);
    CHECK(wrong.load() == 0);
  }
  c.wait_all();
}

TEST_CASE("under sync with one TBB worker, the flow-graph Sobel finishes, bit-identical to the imperative one") {
  tbb::global_control one_worker(tbb::global_control::max_allowed_parallelism, 2);
  Controller c(test::options(Policy::sync));
  workloads::SobelRun run{200, 120, 12, "", ""};
  const auto reference = workloads::sobel(c, run);
  Deadline deadline(std::chrono::seconds(240), "the flow-graph Sobel under sync on one worker");
  for (int round = 0; round < 5; ++round)
    for (int slots : {1, 2, 4}) {
      CAPTURE(slots);
      const auto got = workloads::sobel_flow_graph(c, run, slots);
      CHECK(got.frames == run.frames);
      CHECK(got.checksum == reference.checksum);
    }
}
