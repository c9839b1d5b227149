// The completion hook (Controller::on_ready, docs/flow-nodes.md): runs once what a host task with the
// same roles would wait for has ended, whatever became of it, never blocking the submitting thread.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "support.hpp"

using namespace hetflow;

namespace {

std::size_t count_kind(const std::vector<RequestRecord>& recs, const std::string& kind) {
  return std::size_t(std::count_if(recs.begin(), recs.end(), [&](const RequestRecord& r) { return r.kind == kind; }));
}

}  // namespace

TEST_CASE("on_ready runs after the kernel and the transfer it waits for, and sees their data") {
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    Controller c(test::options(p));
    auto k = c.kernel("hetflow_test.cl", "scale_in_place");
    auto x = c.tile<float>(4096, "x");
    test::fill(x, 1.0f);
    c.move_to(x);
    c.launch(k, Range(4096), io(x), 4096, 3.0f);
    c.move_from(x);
    std::atomic<bool> ran{false}, saw_result{false};
    Outcome seen;
    c.on_ready(
        "check x",
        [&](const Outcome& o) {
          seen = o;
          saw_result = test::all_equal(x, 4.0f);
          ran = true;
        },
        in(x));
    REQUIRE(test::eventually(ran));
    CHECK(seen.ok());
    CHECK(saw_result);
    c.wait_all();
  }
}

TEST_CASE("on_ready is told a failure it waited for, runs anyway, and the failure is still reported by a wait") {
  Controller c(test::options(Policy::async));
  auto x = c.tile<float>(16, "x");
  c.host_task(
      "boom", [] { throw std::runtime_error("no input"); }, out(x));
  c.move_to(x);
  std::atomic<bool> ran{false};
  Outcome seen;
  c.on_ready(
      [&](const Outcome& o) {
        seen = o;
        ran = true;
      },
      device_image(in(x)));
  REQUIRE(test::eventually(ran));
  CHECK_FALSE(seen.ok());
  CHECK(seen.error.find("'move_to(x)'") != std::string::npos);
  CHECK(seen.error.find("cancelled") != std::string::npos);
  try {
    c.wait_all();
    FAIL("no RequestFailed");
  } catch (const RequestFailed& e) {
    CHECK(std::string(e.what()).find("boom") != std::string::npos);
  }
  test::check_still_works(c);
}

TEST_CASE("device_image(in(t)) waits for the kernel that writes t, with no transfer back") {
  Controller c(test::options(Policy::async));
  auto k = c.kernel("hetflow_test.cl", "copy_loop");
  auto a = c.tile<float>(1 << 14, "a");
  auto b = c.device_tile<float>(1 << 14, "b");
  test::fill(a, 2.0f);
  c.move_to(a);
  c.launch(k, Range(64).local(64), in(a), out(b), 1 << 14, 50);
  std::atomic<bool> ran{false};
  Outcome seen;
  c.on_ready(
      [&](const Outcome& out) {
        seen = out;
        ran = true;
      },
      device_image(in(b)));
  REQUIRE(test::eventually(ran));
  CHECK(seen.ok());
  const auto recs = c.records();
  CHECK(std::any_of(recs.begin(), recs.end(),
                    [](const RequestRecord& r) { return r.name == "copy_loop" && r.status == "done"; }));
  CHECK(count_kind(recs, "D2H") == 0);
  c.wait_all();
}

TEST_CASE("on_ready returns at once while what it waits for is still running") {
  Controller c(test::options(Policy::async));
  auto x = c.tile<int>(1, "gate");
  std::atomic<bool> open{false}, ran{false};
  c.host_task(
      "gate",
      [&] {
        while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      out(x));
  c.on_ready([&](const Outcome&) { ran = true; }, in(x));  // returns while the gate is shut
  CHECK_FALSE(ran.load());
  open = true;
  REQUIRE(test::eventually(ran));
  c.wait_all();
}

TEST_CASE("on_ready fires when the driver's completion callbacks never come (the poller sees the end)") {
  ::setenv("HETFLOW_DEBUG_DROP_CALLBACKS", "1", 1);
  Controller c(test::options(Policy::async));
  ::unsetenv("HETFLOW_DEBUG_DROP_CALLBACKS");
  auto k = c.kernel("hetflow_test.cl", "scale_in_place");
  auto x = c.tile<float>(1024, "x");
  test::fill(x, 0.0f);
  c.move_to(x);
  c.launch(k, Range(1024), io(x), 1024, 1.0f);
  c.move_from(x);
  std::atomic<bool> ran{false};
  c.on_ready([&](const Outcome& o) { ran = o.ok() && test::all_equal(x, 1.0f); }, in(x));
  REQUIRE(test::eventually(ran));
  c.wait_all();
}

// Host tasks share the hooks' way of learning that a device command ended: NVIDIA's callbacks come
// ~17 ms late (docs/drivers.md), so the completion poller checks while a host task waits on one.
// Here they never come, and no thread waits or enqueues after the D2H: only the poller can start it.
TEST_CASE("a host task after a device command runs when completion callbacks never come and nobody waits") {
  ::setenv("HETFLOW_DEBUG_DROP_CALLBACKS", "1", 1);
  Controller c(test::options(Policy::async));
  ::unsetenv("HETFLOW_DEBUG_DROP_CALLBACKS");
  auto k = c.kernel("hetflow_test.cl", "scale_in_place");
  auto x = c.tile<float>(1024, "x");
  test::fill(x, 0.0f);
  c.move_to(x);
  c.launch(k, Range(1024), io(x), 1024, 1.0f);
  c.move_from(x);
  std::atomic<bool> ran{false};
  c.host_task(
      "reader", [&] { ran = test::all_equal(x, 1.0f); }, in(x));
  REQUIRE(test::eventually(ran));
  c.wait_all();
}

TEST_CASE("a hook may submit requests, is ordered before later writers of its tiles, and its throw is reported") {
  Controller c(test::options(Policy::async));
  auto k = c.kernel("hetflow_test.cl", "scale_in_place");
  auto x = c.tile<float>(256, "x");
  test::fill(x, 1.0f);
  std::atomic<int> stage{0};
  c.on_ready(
      [&](const Outcome&) {
        test::fill(x, 5.0f);  // a host write, as a host task's
        c.move_to(x);
        c.launch(k, Range(256), io(x), 256, 2.0f);
        c.move_from(x);
        stage = 1;
      },
      io(x));
  c.host_task(
      "after", [&] { stage = stage.load() == 1 ? 2 : -1; }, io(x));
  c.wait_all();  // the hook ran; what it submitted came after this wait in program order:
  c.wait_all();
  CHECK(stage.load() == 2);
  CHECK(test::all_equal(x, 11.0f));

  c.on_ready([](const Outcome&) { throw std::runtime_error("hook failed"); }, in(x));
  CHECK_THROWS_WITH_AS(c.wait_all(), doctest::Contains("hook failed"), RequestFailed);
}

TEST_CASE("misuse of device_image and on_ready is refused with what is wrong") {
  Controller c(test::options(Policy::async));
  auto x = c.tile<float>(8, "x");
  auto d = c.device_tile<float>(8, "scratch");
  CHECK_THROWS_WITH_AS(device_image(out(x)), doctest::Contains("takes in(t)"), UsageError);
  CHECK_THROWS_WITH_AS(c.host_task([] {}, device_image(in(x))), doctest::Contains("on_ready hooks only"), UsageError);
  CHECK_THROWS_WITH_AS(c.on_ready([](const Outcome&) {}, in(d)), doctest::Contains("device_image(in(t))"), UsageError);
  c.wait_all();
}

// As host_task does: a hook runs once, so it may own what it uses. With std::function this did not
// compile (a std::function must be copyable).
TEST_CASE("on_ready takes a move-only callable, runs it once and releases what it owns") {
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    Controller c(test::options(p));
    auto x = c.tile<float>(16, "x");
    test::fill(x, 2.0f);
    c.move_to(x);
    auto owned = std::make_shared<int>(7);
    std::weak_ptr<int> watch = owned;
    std::atomic<int> seen{0};
    c.on_ready(
        "owns",
        [held = std::make_unique<std::shared_ptr<int>>(std::move(owned)), &seen](const Outcome& o) {
          if (o.ok()) seen = **held;
        },
        in(x));
    c.wait_all();
    CHECK(seen.load() == 7);
    CHECK(test::eventually([&] { return watch.expired(); }));
  }
}

// Under sync every request but a launch and a hook blocks; a hook is the way to be told without
// blocking, so it returns at once, and may be submitted from a host task where the blocking ones are
// refused (controller.hpp says so).
TEST_CASE("under the sync policy on_ready returns at once, also from inside a host task") {
  Controller c(test::options(Policy::sync));
  auto x = c.tile<float>(16, "x");
  std::atomic<bool> ran{false};
  bool pending_when_returned = false;
  c.host_task(
      "submits a hook",
      [&] {
        // Its hook waits for this very task (out(x) then in(x)): had on_ready blocked, it could not return.
        c.on_ready([&](const Outcome& o) { ran = o.ok(); }, in(x));
        pending_when_returned = !ran.load();
      },
      out(x));
  CHECK_NOTHROW(c.wait_all());
  CHECK(pending_when_returned);
  CHECK(ran.load());
}
