// Whether an engine keeps registering completion callbacks (src/callback_worth.hpp): the rule alone,
// then on the default device with callbacks that bring no news (HETFLOW_DEBUG_DROP_CALLBACKS, as
// NVIDIA's, which come milliseconds after their command was seen ended): the engine stops
// registering them, and what waits on device commands still runs, faults included.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "callback_worth.hpp"
#include "log.hpp"
#include "log_capture.hpp"
#include "support.hpp"

using namespace hetflow;
using hetflow::detail::CallbackWorth;
using test::Env;
using test::LogCapture;

TEST_CASE("callbacks stay registered until the first 64 are judged, and stop only if nearly all came late") {
  SUBCASE("all late: stop at the 64th") {
    CallbackWorth w;
    for (unsigned i = 1; i < CallbackWorth::kJudged; ++i) {
      CHECK_FALSE(w.arrived(false));
      CHECK(w.worth_registering());
    }
    CHECK(w.arrived(false));
    CHECK_FALSE(w.worth_registering());
    CHECK(w.late() == CallbackWorth::kJudged);
  }
  SUBCASE("exactly kLateToStop late: stop") {
    CallbackWorth w;
    for (unsigned i = 0; i < CallbackWorth::kJudged; ++i) w.arrived(i >= CallbackWorth::kLateToStop);
    CHECK_FALSE(w.worth_registering());
  }
  SUBCASE("one fewer late: keep") {
    CallbackWorth w;
    for (unsigned i = 0; i < CallbackWorth::kJudged; ++i) w.arrived(i >= CallbackWorth::kLateToStop - 1);
    CHECK(w.worth_registering());
    CHECK(w.late() == CallbackWorth::kLateToStop - 1);
  }
  SUBCASE("decided once: later arrivals change nothing") {
    CallbackWorth w;
    for (unsigned i = 0; i < CallbackWorth::kJudged; ++i) w.arrived(true);
    CHECK(w.worth_registering());
    for (unsigned i = 0; i < 10 * CallbackWorth::kJudged; ++i) CHECK_FALSE(w.arrived(false));
    CHECK(w.worth_registering());
    CHECK(w.late() == 0);
  }
  SUBCASE("from many threads at once: one decision") {
    CallbackWorth w;
    std::atomic<int> decisions{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        for (unsigned i = 0; i < CallbackWorth::kJudged; ++i) decisions += w.arrived(false) ? 1 : 0;
      });
    for (auto& t : threads) t.join();
    CHECK(decisions == 1);
    CHECK_FALSE(w.worth_registering());
  }
}

TEST_CASE(
    "with callbacks that bring no news, the engine stops registering them, and hooks, host tasks and faults still "
    "come through") {
  const Env drop("HETFLOW_DEBUG_DROP_CALLBACKS", "1");
  const Env fault("HETFLOW_DEBUG_FAULT_KERNEL", "faulty");
  LogCapture captured;
  Controller c(test::options(Policy::async));
  auto scale = c.kernel("hetflow_test.cl", "scale_in_place");
  Kernel faulty = c.kernel_from_source("kernel void faulty(global float* x) { x[get_global_id(0)] = 7.0f; }", "faulty");
  constexpr int rounds = 200;  // each waits on two device commands: well past the judged 64
  constexpr int n = 1024;
  std::vector<Tile<float>> tiles;
  for (int i = 0; i < 4; ++i) tiles.push_back(c.tile<float>(n, "x" + std::to_string(i)));
  std::atomic<int> hooks_ok{0}, host_ok{0}, wrong{0};
  for (int round = 0; round < rounds; ++round) {
    auto& x = tiles[std::size_t(round % 4)];
    const float start = float(round);
    c.host_task(
        "set", [x, start]() mutable { test::fill(x, start); }, out(x));
    c.move_to(x);
    c.launch(scale, Range(n), io(x), n, 2.0f);  // x = 2 x + 1
    c.move_from(x);
    if (round % 2 == 0) {
      c.on_ready(
          "check",
          [&, x, start](const Outcome& o) { (o.ok() && test::all_equal(x, 2 * start + 1) ? hooks_ok : wrong)++; },
          in(x));
    } else {
      c.host_task(
          "check", [&, x, start] { (test::all_equal(x, 2 * start + 1) ? host_ok : wrong)++; }, in(x));
    }
  }
  REQUIRE(test::eventually([&] { return hooks_ok + host_ok + wrong == rounds; }));
  CHECK(wrong == 0);
  c.wait_all();
  const std::string lines = captured.text();
  CHECK(lines.find("completion callbacks: 64 of the first 64 came after their command was seen ended: no longer "
                   "registered") != std::string::npos);

  // After the verdict: a command that fails is still seen by the hook that waits on it, without a callback.
  auto& y = tiles[0];
  c.launch(faulty, Range(n), out(y));
  std::atomic<bool> told{false};
  std::string error;
  c.on_ready(
      "after the fault",
      [&](const Outcome& o) {
        if (!o.ok()) error = o.error;
        told = true;
      },
      device_image(in(y)));
  REQUIRE(test::eventually([&] { return told.load(); }));
  CHECK(error.find("'faulty'") != std::string::npos);
  CHECK_THROWS_AS(c.wait_all(), DeviceLost);  // the fault (injected) takes the context with it
}
