// hetflow's nodes in a user's tbb::flow::graph (include/hetflow/flow.hpp, docs/flow-nodes.md): results,
// order, backpressure, failures and wait_for_all, on the real flow graph and the default device.
#include <hetflow/flow.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "support.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/pipelines.hpp"
#include "workloads/sobel_flow.hpp"

using namespace hetflow;
using namespace tbb::flow;
namespace hf = hetflow::flow;

namespace {

struct Item : hf::Message {
  Tile<float> x;
};

// A pipeline of `n` messages over `k` slots: a host node writes seq into the slot's tile, a kernel node
// computes x*2+1, a host node checks the result; `middle` may be put between the kernel and the check.
struct Pipeline {
  Pipeline(Controller& c, int k, std::size_t len = 1024)
      : c(c), kernel(c.kernel("hetflow_test.cl", "scale_in_place")), len(len) {
    for (int s = 0; s < k; ++s) {
      Item it;
      it.x = c.tile<float>(len, "slot" + std::to_string(s));
      slots.push_back(it);
    }
  }
  Controller& c;
  Kernel kernel;
  std::size_t len;
  std::vector<Item> slots;
};

}  // namespace

TEST_CASE("the flow-graph Sobel is bit-identical to the imperative one, for 1 to 4 slots and both policies") {
  workloads::SobelRun run{200, 120, 7, "", ""};
  for (Policy p : {Policy::async, Policy::sync}) {
    Controller c(test::options(p));
    const auto reference = workloads::sobel(c, run);
    for (int slots : {1, 2, 4}) {
      CAPTURE(test::policy_name(p));
      CAPTURE(slots);
      const auto got = workloads::sobel_flow_graph(c, run, slots);
      CHECK(got.frames == 7);
      CHECK(got.checksum == reference.checksum);
      REQUIRE(got.output.size() == reference.output.size());
      CHECK(workloads::count_bit_differences(got.output.data(), reference.output.data(), got.output.size()) == 0);
    }
  }
}

TEST_CASE("messages flow once each, in order behind a sequencer, never more than K in flight, data right") {
  Controller c(test::options(Policy::async, 2));
  const int K = 3, N = 200;
  Pipeline pl(c, K);
  std::atomic<int> in_flight{0}, most{0};
  std::mutex m;
  std::vector<std::uint64_t> seen_in_order;
  std::multiset<std::uint64_t> seen_unordered;
  std::atomic<int> wrong{0};

  graph g;
  buffer_node<Item> pool(g);
  input_node<std::uint64_t> numbers(g, [i = std::uint64_t{0}](tbb::flow_control& fc) mutable {
    if (i == N) fc.stop();
    return i++;
  });
  join_node<std::tuple<std::uint64_t, Item>, reserving> take(g);
  function_node<std::tuple<std::uint64_t, Item>, Item> label(g, unlimited, [&](const auto& t) {
    Item it = std::get<1>(t);
    it.seq = std::get<0>(t);
    int now = ++in_flight, before = most.load();
    while (now > before && !most.compare_exchange_weak(before, now)) {
    }
    return it;
  });
  hf::host_node<Item> fill(
      g, c, [](const Item& it) { return hf::touch(out(it.x)); },
      [](Item& it) { std::fill(it.x.data(), it.x.data() + it.x.size(), float(it.seq)); }, {.name = "fill"});
  hf::kernel_node<Item> scale(g, c, pl.kernel,
                              [&](const Item& it) { return hf::launch(Range(pl.len), io(it.x), int(pl.len), 2.0f); });
  hf::host_node<Item> check(
      g, c, [](const Item& it) { return hf::touch(in(it.x)); },
      [&](Item& it) {
        const float want = float(it.seq) * 2.0f + 1.0f;
        if (!std::all_of(it.x.data(), it.x.data() + it.x.size(), [&](float v) { return v == want; })) ++wrong;
        std::lock_guard lock(m);
        seen_unordered.insert(it.seq);
      },
      {.name = "check"});
  sequencer_node<Item> order(g, [](const Item& it) { return it.seq; });
  function_node<Item> sink(g, serial, [&](const Item& it) {
    seen_in_order.push_back(it.seq);
    CHECK_FALSE(it.failed());
    --in_flight;
    pool.try_put(it);
  });
  make_edge(numbers, input_port<0>(take));
  make_edge(pool, input_port<1>(take));
  make_edge(take, label);
  make_edge(label, fill);
  make_edge(fill, scale);
  make_edge(scale, check);
  make_edge(check, order);
  make_edge(order, sink);
  for (auto& s : pl.slots) pool.try_put(s);
  numbers.activate();
  g.wait_for_all();

  CHECK(wrong.load() == 0);
  CHECK(most.load() <= K);
  CHECK(most.load() >= 1);
  REQUIRE(seen_in_order.size() == std::size_t(N));
  for (int i = 0; i < N; ++i) CHECK(seen_in_order[std::size_t(i)] == std::uint64_t(i));
  CHECK(seen_unordered.size() == std::size_t(N));
  CHECK(std::set<std::uint64_t>(seen_unordered.begin(), seen_unordered.end()).size() == std::size_t(N));
  c.wait_all();
}

TEST_CASE("a host body that throws, a launch refused and a failed request mark their message; the rest flow") {
  Controller c(test::options(Policy::async));
  const int K = 2, N = 20;
  Pipeline pl(c, K, 256);
  std::mutex m;
  std::map<std::uint64_t, Item> results;

  graph g;
  buffer_node<Item> pool(g);
  input_node<std::uint64_t> numbers(g, [i = std::uint64_t{0}](tbb::flow_control& fc) mutable {
    if (i == N) fc.stop();
    return i++;
  });
  join_node<std::tuple<std::uint64_t, Item>, reserving> take(g);
  function_node<std::tuple<std::uint64_t, Item>, Item> label(g, serial, [](const auto& t) {
    Item it = std::get<1>(t);
    it.seq = std::get<0>(t);
    it.clear_failure();
    return it;
  });
  hf::host_node<Item> fill(
      g, c, [](const Item& it) { return hf::touch(out(it.x)); },
      [](Item& it) {
        if (it.seq == 5) throw std::runtime_error("bad frame 5");
        std::fill(it.x.data(), it.x.data() + it.x.size(), float(it.seq));
      },
      {.name = "fill"});
  // Frame 11: a request of the program's own, outside the nodes, fails on the message's tile.
  function_node<Item, Item> meddle(g, serial, [&](const Item& it) {
    if (it.seq == 11)
      c.host_task(
          "sabotage", [] { throw std::runtime_error("sabotaged"); }, io(it.x));
    return it;
  });
  hf::kernel_node<Item> scale(g, c, pl.kernel, [&](const Item& it) {
    if (it.seq == 7) return hf::launch(Range(pl.len), io(it.x), int(pl.len));  // one argument short
    return hf::launch(Range(pl.len), io(it.x), int(pl.len), 2.0f);
  });
  hf::to_host_node<Item> back(g, c, [](const Item& it) { return hf::touch(in(it.x)); });
  function_node<Item> sink(g, serial, [&](const Item& it) {
    Item copy = it;
    if (!it.failed()) {  // a plain TBB node reads the host image after to_host_node
      const float want = float(it.seq) * 2.0f + 1.0f;
      if (!std::all_of(it.x.data(), it.x.data() + it.x.size(), [&](float v) { return v == want; }))
        copy.error = "wrong data";
    }
    {
      std::lock_guard lock(m);
      results[it.seq] = copy;
    }
    pool.try_put(it);
  });
  make_edge(numbers, input_port<0>(take));
  make_edge(pool, input_port<1>(take));
  make_edge(take, label);
  make_edge(label, fill);
  make_edge(fill, meddle);
  make_edge(meddle, scale);
  make_edge(scale, back);
  make_edge(back, sink);
  for (auto& s : pl.slots) pool.try_put(s);
  numbers.activate();
  g.wait_for_all();

  REQUIRE(results.size() == std::size_t(N));
  for (auto& [seq, it] : results) {
    CAPTURE(seq);
    if (seq == 5) {
      CHECK(it.error.find("node 'fill': bad frame 5") != std::string::npos);
      CHECK(it.exception != nullptr);
    } else if (seq == 7) {
      CHECK(it.error.find("scale_in_place") != std::string::npos);
      CHECK(it.error.find("argument") != std::string::npos);
    } else if (seq == 11) {
      CHECK(it.error.find("sabotage") != std::string::npos);
      CHECK_FALSE(it.failures.empty());
    } else {
      CHECK_MESSAGE(!it.failed(), it.error);
    }
  }
  // The message took the failure of its tile's request: no wait reports it again, and the slot worked on.
  CHECK_NOTHROW(c.wait_all());
}

TEST_CASE("wait_for_all returns only after the device work of a graph that ends in a kernel node") {
  Controller c(test::options(Policy::async));
  auto k = c.kernel("hetflow_test.cl", "copy_loop");
  auto a = c.tile<float>(1 << 14, "a");
  test::fill(a, 1.0f);
  const int N = 6;
  std::vector<Tile<float>> outs;
  for (int i = 0; i < N; ++i) outs.push_back(c.device_tile<float>(1 << 14, "b" + std::to_string(i)));
  struct Job : hf::Message {
    Tile<float> a, b;
  };
  graph g;
  hf::kernel_node<Job> copy(
      g, c, k, [](const Job& j) { return hf::launch(Range(64).local(64), in(j.a), out(j.b), int(j.a.size()), 30); },
      {.name = "copy"});
  for (int i = 0; i < N; ++i) {
    Job j;
    j.seq = std::uint64_t(i);
    j.a = a;
    j.b = outs[std::size_t(i)];
    copy.try_put(j);
  }
  g.wait_for_all();
  const auto recs = c.records();
  // Each kernel's hook (named after the node) ran, which it does only once that kernel has ended.
  CHECK(std::count_if(recs.begin(), recs.end(),
                      [](const RequestRecord& r) { return r.name == "copy" && r.status == "done"; }) == N);
  CHECK(std::count_if(recs.begin(), recs.end(), [](const RequestRecord& r) { return r.name == "move_to(a)"; }) == 1);
  c.wait_all();
}

TEST_CASE("a cancelled graph's wait_for_all returns, the controller settles, and the graph runs again after reset") {
  Controller c(test::options(Policy::async));
  auto kernel = c.kernel("hetflow_test.cl", "scale_in_place");
  auto x = c.tile<float>(1 << 16, "x");
  test::fill(x, 0.0f);
  struct Step : hf::Message {
    Tile<float> x;
  };
  graph g;
  std::atomic<int> done{0};
  hf::kernel_node<Step> scale(
      g, c, kernel, [](const Step& s) { return hf::launch(Range(s.x.size()), io(s.x), int(s.x.size()), 1.0f); });
  function_node<Step> count(g, unlimited, [&](const Step&) { ++done; });
  make_edge(scale, count);
  for (int i = 0; i < 200; ++i) {
    Step s;
    s.x = x;
    scale.try_put(s);
    if (i == 10) g.cancel();
  }
  g.wait_for_all();
  CHECK_NOTHROW(c.wait_all());
  g.reset();
  done = 0;
  test::fill(x, 0.0f);
  x.shared_state()->latest.store(1);  // the host image was rewritten outside the nodes
  for (int i = 0; i < 5; ++i) {
    Step s;
    s.x = x;
    scale.try_put(s);
  }
  g.wait_for_all();
  CHECK(done.load() == 5);
  c.move_from(x);
  c.wait(x);
  CHECK(test::all_equal(x, 5.0f));
}
