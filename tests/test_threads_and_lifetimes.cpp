// Several user threads, failed requests and freed tiles: what the headers promise about them
// (include/hetflow/controller.hpp), kept by tests. Run under ThreadSanitizer and AddressSanitizer
// as well as plainly (.ci/run).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include "engine.hpp"
#include "support.hpp"

using namespace hetflow;

TEST_CASE("free(t): requests submitted before it still use the tile, nothing after it may") {
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    Controller c(test::options(p));
    auto t = c.tile<float>(256, "t"), sum = c.tile<float>(1, "sum");
    test::fill(t, 2.0f);
    c.move_to(t);
    c.move_from(t);
    // Reads t's host image through its handle, after free(t) was called.
    c.host_task(
        "sum t",
        [t, sum] {
          float s = 0;
          for (float v : t.host()) s += v;
          sum[0] = s;
        },
        in(t), out(sum));
    c.free(t);
    CHECK_THROWS_WITH_AS(c.move_to(t), doctest::Contains("used after free"), UsageError);
    CHECK_THROWS_WITH_AS(t.data(), "tile 't' used after free", UsageError);
    CHECK_THROWS_WITH_AS(c.free(t), doctest::Contains("free"), UsageError);
    c.wait(sum);
    CHECK(sum[0] == 512.0f);
    c.wait_all();  // covers the release itself
    // A host task that reaches a released tile through a captured handle it did not declare.
    c.host_task("late reader", [t] { (void)t.data(); });
    CHECK_THROWS_WITH_AS(c.wait_all(), doctest::Contains("tile 't' used after free"), RequestFailed);
  }
}

TEST_CASE("free(t): a host task submitted after it may not use t, even while t's release still waits") {
  Controller c(test::options(Policy::async));
  auto t = c.tile<int>(64, "t"), other = c.tile<int>(1, "other");
  test::fill(t, 5);
  std::atomic<bool> tried{false};
  // Holds t's release back until the late task has tried (bounded, so a defect cannot hang the test).
  c.host_task(
      "holder",
      [&tried] {
        for (int i = 0; i < 5000 && !tried.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      io(t));
  c.free(t);
  std::string read, write;
  c.host_task(
      "after free",
      [&, t] {
        try {
          read = std::to_string(t[5]);
        } catch (const UsageError& e) {
          read = e.what();
        }
        try {
          t[6] = 99;
          write = "accepted";
        } catch (const UsageError& e) {
          write = e.what();
        }
        tried = true;
      },
      out(other));
  c.wait_all();
  CHECK(tried.load());
  CHECK(read == "tile 't' used after free");
  CHECK(write == "tile 't' used after free");
}

TEST_CASE("a tile whose handles are all dropped goes once its requests are done, without a wait_all") {
  for (Policy p : {Policy::async, Policy::sync})
    for (bool record : {false, true}) {  // a recording controller keeps its requests, not their tiles
      CAPTURE(test::policy_name(p));
      CAPTURE(record);
      ControllerOptions o;
      o.policy = p;
      o.record = record;
      Controller c(o);
      auto other = c.tile<int>(1, "other");
      std::vector<std::weak_ptr<detail::TileState>> dropped;
      for (int i = 0; i < 20; ++i) {
        auto t = c.tile<int>(1024, "tmp");
        test::fill(t, i);
        c.move_to(t);
        c.move_from(t);
        dropped.push_back(t.shared_state());
      }
      // Only other work from here on, on the same copy queues: nothing names the dropped tiles again.
      CHECK(test::eventually([&] {
        c.move_to(other);
        c.move_from(other);
        c.wait(other);
        return std::all_of(dropped.begin(), dropped.end(), [](const auto& w) { return w.expired(); });
      }));
    }
}

TEST_CASE("a tile dropped after its wait goes at once, though its queue gets no more commands") {
  // A done command stays in its queue's list until later ones settle it; it held its tiles there, so
  // dropped 128 MB tiles waited (up to 16 of them) for commands that might never come.
  for (Policy p : {Policy::async, Policy::sync})
    for (bool record : {false, true}) {  // a recording controller keeps its waits, not their tiles
      CAPTURE(test::policy_name(p));
      CAPTURE(record);
      ControllerOptions o;
      o.policy = p;
      o.record = record;
      Controller c(o);
      auto k = c.kernel("hetflow_test.cl", "scale_in_place");
      std::vector<std::weak_ptr<detail::TileState>> dropped;
      for (int i = 0; i < 6; ++i) {
        auto t = c.tile<float>(1 << 16, "dropped");
        test::fill(t, 1.0f);
        c.move_to(t);
        c.launch(k, Range(1 << 16), io(t), 1 << 16, 2.0f);
        c.move_from(t);
        c.wait(t);
        dropped.push_back(t.shared_state());
      }
      CHECK(test::eventually(
          [&] { return std::all_of(dropped.begin(), dropped.end(), [](const auto& w) { return w.expired(); }); }));
    }
}

TEST_CASE("a recording controller keeps what its records need, not the tiles its waits waited on") {
  // A recording controller keeps every request for its dumps, and its waits kept their tiles (a
  // sync request's wait, its request): a 64 MB tile waited on and dropped lived, host and device
  // memory, as long as the controller.
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    Controller c(test::options(p));  // recording
    REQUIRE(c.recording());
    auto k = c.kernel("hetflow_test.cl", "scale_in_place");
    constexpr int n = 16 << 20;  // 64 MB of floats
    std::weak_ptr<detail::TileState> dropped;
    {
      auto t = c.tile<float>(std::size_t(n), "big");
      test::fill(t, 1.0f);
      c.move_to(t);
      c.launch(k, Range(n), io(t), n, 2.0f);
      c.move_from(t);
      c.wait(t);
      CHECK(t[n - 1] == 3.0f);  // 2 x + 1
      c.host_task(
          "reads big", [t] { (void)t[0]; }, in(t));
      c.wait(t);
      dropped = t.shared_state();
    }
    CHECK(test::eventually([&] { return dropped.expired(); }));
    // The records still say what ran.
    const auto recs = c.records();
    const auto waits = std::count_if(recs.begin(), recs.end(), [](const RequestRecord& r) {
      return r.name == "wait(big)" && r.kind == "wait" && r.status == "done" && r.end_ns >= 0;
    });
    CHECK(waits == 2);
    CHECK(std::any_of(recs.begin(), recs.end(), [](const RequestRecord& r) {
      return r.name == "scale_in_place" && r.status == "done" && !r.in_edges.empty() && r.in_edges[0].tile == "big";
    }));
  }
}

TEST_CASE("free(t) on one thread while another submits on t: each request runs on the live tile or is refused") {
  // The tile's checks ran before the submission lock: a request checked before free() and ordered
  // after its release ran on released buffers (PoCL: a kernel wrote into freed memory, a transfer
  // failed with CL_INVALID_MEM_OBJECT).
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    Controller c(test::options(p));
    auto k = c.kernel("hetflow_test.cl", "scale_in_place");
    for (int round = 0; round < 60; ++round) {
      auto t = c.tile<float>(4096, "raced");
      test::fill(t, 0.0f);
      std::atomic<bool> started{false};
      std::string unexpected;
      std::thread user([&, t] {
        try {
          for (;;) {
            c.move_to(t);
            started = true;
            c.launch(k, Range(4096), io(t), 4096, 2.0f);
            c.host_task(
                "touches", [t] { t[0] += 1.0f; }, io(t));
            c.move_from(t);
          }
        } catch (const UsageError& e) {
          if (std::string(e.what()).find("used after free") == std::string::npos) unexpected = e.what();
        } catch (const std::exception& e) {
          unexpected = e.what();
        }
      });
      while (!started) std::this_thread::yield();
      c.free(t);
      user.join();
      CHECK(unexpected.empty());
      CHECK_NOTHROW(c.wait_all());  // nothing accepted ran on released buffers and failed
    }
  }
}

TEST_CASE("a failed request's tiles and a cancelled task's captures go before the wait that reports it") {
  // Under async a failure is listed until a wait reports it; what the failed and cancelled requests
  // held went only then (a program dropping 32,766 failing tiles exhausted Oclgrind's buffers).
  static std::atomic<int> captured{0};
  struct Captured {
    Captured() { captured.fetch_add(1); }
    Captured(const Captured&) { captured.fetch_add(1); }
    ~Captured() { captured.fetch_sub(1); }
  };
  ControllerOptions o;
  o.policy = Policy::async;  // not recording: a recording controller keeps every request for its dumps
  Controller c(o);
  auto other = c.tile<int>(1, "other");
  std::vector<std::weak_ptr<detail::TileState>> dropped;
  for (int i = 0; i < 8; ++i) {
    auto t = c.tile<int>(1024, "doomed");
    c.host_task(
        "fails", [] { throw std::runtime_error("planned"); }, out(t));
    c.move_to(t);  // cancelled
    c.host_task(
        "cancelled", [k = Captured{}, t] { t[0] = 1; }, io(t));
    dropped.push_back(t.shared_state());
  }
  CHECK(test::eventually([&] {
    c.move_to(other);
    c.move_from(other);
    c.wait(other);  // other's wait: the failures stay listed
    return captured.load() == 0 &&
           std::all_of(dropped.begin(), dropped.end(), [](const auto& w) { return w.expired(); });
  }));
  try {
    c.wait_all();
    FAIL("the failures were not reported");
  } catch (const RequestFailed& e) {
    CHECK(e.failures().size() == 24);
    CHECK(e.failures().front().tiles == std::vector<std::string>{"doomed"});
  }
}

TEST_CASE("host_task takes move-only callables, and what they own is neither copied nor leaked") {
  // Counts the owned objects alive.
  static std::atomic<int> owned{0};
  struct Owned {
    int value;
    explicit Owned(int v) : value(v) { owned.fetch_add(1); }
    ~Owned() { owned.fetch_sub(1); }
  };
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    {
      Controller c(test::options(p));
      auto x = c.tile<int>(4, "x");
      c.host_task(
          "unique_ptr", [o = std::make_unique<Owned>(7), x] { x[0] = o->value; }, out(x));
      c.wait(x);
      CHECK(x[0] == 7);
      CHECK(owned.load() == 0);  // a host task's state is dropped once it has run
      // Cancelled behind a failure: never run, destroyed with its request.
      c.host_task(
          "fails", [] { throw std::runtime_error("planned"); }, out(x));
      c.host_task(
          "cancelled", [o = std::make_unique<Owned>(8), x] { x[1] = o->value; }, io(x));
      CHECK_THROWS_AS(c.wait(x), RequestFailed);
      c.wait_all();
    }
    CHECK(owned.load() == 0);
  }
}

TEST_CASE("several threads submit and wait on one controller at once") {
  for (unsigned queues : {1u, 3u}) {
    CAPTURE(queues);
    Controller c(test::options(Policy::async, queues));
    auto k = c.kernel("hetflow_test.cl", "scale_in_place");
    constexpr int threads = 4, rounds = 200;
    std::vector<Tile<float>> tiles;
    for (const char* name : {"t0", "t1", "t2", "t3"}) tiles.push_back(c.tile<float>(64, name));
    std::atomic<int> wrong{0};
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i)
      workers.emplace_back([&, i] {
        Tile<float> t = tiles[std::size_t(i)];
        for (int r = 0; r < rounds; ++r) {
          c.host_task(
              "fill", [t, r]() mutable { test::fill(t, float(r)); }, out(t));
          c.move_to(t);
          c.launch(k, Range(64), io(t), 64, 2.0f);  // 2r + 1
          c.move_from(t);
          if (r % 3 == 0) {
            c.wait(t);
            if (!test::all_equal(t, float(2 * r + 1))) ++wrong;
          } else if (r % 50 == 49) {
            c.wait_all();
            if (!test::all_equal(t, float(2 * r + 1))) ++wrong;
          }
        }
        c.wait(t);
        if (!test::all_equal(t, float(2 * (rounds - 1) + 1))) ++wrong;
      });
    for (auto& w : workers) w.join();
    CHECK(wrong == 0);
    CHECK_NOTHROW(c.wait_all());
  }
}

// A wait is over when what it waits for is: the program's thread waits for b's requests while an
// unrelated host task still runs, and only then lets that task end. Waiting threads used to run
// graph tasks until the whole graph was idle, so the wait lasted as long as the other task (5 s in
// a program tried by hand, or for ever where that task waits for the program's thread, as here).
TEST_CASE("a wait ends with its own requests, not with an unrelated host task still running") {
  for (unsigned queues : {1u, 3u}) {
    CAPTURE(queues);
    Controller c(test::options(Policy::async, queues));
    auto k = c.kernel("hetflow_test.cl", "scale_in_place");
    auto a = c.tile<float>(64, "a"), b = c.tile<float>(64, "b");
    // On a worker before the program waits: a waiting thread runs the graph's tasks, and this one
    // must not be among them (controller.hpp, wait()). On 2 cores it holds the only worker, so the
    // program's thread runs b's host tasks itself.
    test::GatedTask unrelated(c, a);
    for (int round = 0; round < 3; ++round) {
      c.host_task(
          "fill b", [b, round]() mutable { test::fill(b, float(round)); }, out(b));
      c.wait(b);  // a host task alone
      CHECK(test::all_equal(b, float(round)));
      c.move_to(b);
      c.launch(k, Range(64), io(b), 64, 2.0f);
      c.move_from(b);
      c.wait(b);  // device commands enqueued behind a host task
      CHECK(test::all_equal(b, float(2 * round + 1)));
    }
    unrelated.open();
    c.wait_all();
    CHECK_FALSE(unrelated.timed_out());
  }
}

// Another thread's wait helped run the graph through graph::wait_for_all(), which oneTBB hands to a
// worker when the graph's arena is full and which returns only once the whole graph is idle: its
// wait for a quick host task lasted as long as an unrelated task held open beside it. Then it slept,
// and on 2 cores (one TBB worker, busy with that task) the quick one still waited for it. Now the
// waiting thread runs ready host tasks itself. In the machine's own arena and in one of 4 threads.
TEST_CASE("a wait on another thread ends with its own host task, not with an unrelated one still running") {
  const auto check = [] {
    for (bool maker_waits : {false, true}) {
      CAPTURE(maker_waits);
      Controller c(test::options(Policy::async));
      auto a = c.tile<int>(1, "a"), b = c.tile<int>(1, "b");
      a[0] = 0;
      test::GatedTask unrelated(c, b);
      std::promise<void> waited;
      std::future<void> waited_here = waited.get_future();
      std::thread other([&c, a, &waited]() mutable {
        c.host_task(
            "quick", [a]() mutable { a[0] += 1; }, io(a));
        c.wait(a);
        waited.set_value();
      });
      // The gate opens once the other thread's wait has returned, or after 20 s if it never does.
      bool in_time = false;
      std::thread opener([&] {
        in_time = waited_here.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
        unrelated.open();
      });
      if (maker_waits) c.wait(b);  // the maker parked in the arena meanwhile must not matter either
      opener.join();
      other.join();
      c.wait_all();
      CHECK(in_time);
      CHECK(a[0] == 1);
      CHECK_FALSE(unrelated.timed_out());
    }
  };
  if (tbb::this_task_arena::max_concurrency() >= 2) {  // with no worker, waiting threads help instead
    INFO("the machine's own arena");
    check();
  }
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 4);
  tbb::task_arena arena(4);
  INFO("an arena of 4 threads");
  arena.execute(check);
}

// The waiting thread runs only what its own wait waits for: an unrelated ready task may wait for
// what that thread does after its wait, and running it there would hang both. On 2 cores the one
// worker is held, so the unrelated task is ready and unrun when the other thread waits.
TEST_CASE("a thread's wait runs its own ready host tasks, never an unrelated one that waits for that thread") {
  Controller c(test::options(Policy::async));
  auto a = c.tile<int>(1, "a"), b = c.tile<int>(1, "b"), u = c.tile<int>(1, "u");
  a[0] = 0;
  test::GatedTask holds_a_worker(c, b);
  std::promise<void> after_wait;
  std::shared_future<void> waited = after_wait.get_future().share();
  auto unrelated_timed_out = std::make_shared<std::atomic<bool>>(false);
  c.host_task(
      "waits for the other thread",
      [waited, unrelated_timed_out] {
        if (waited.wait_for(std::chrono::seconds(20)) != std::future_status::ready) *unrelated_timed_out = true;
      },
      out(u));
  std::promise<void> returned;
  std::future<void> returned_here = returned.get_future();
  std::thread other([&c, a, &after_wait, &returned]() mutable {
    c.host_task(
        "quick", [a]() mutable { a[0] += 1; }, io(a));
    c.wait(a);
    returned.set_value();
    after_wait.set_value();
  });
  const bool in_time = returned_here.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  holds_a_worker.open();
  other.join();
  c.wait_all();
  CHECK(in_time);
  CHECK(a[0] == 1);
  CHECK_FALSE(*unrelated_timed_out);
  CHECK_FALSE(holds_a_worker.timed_out());
}

// With TBB allowed one thread, no worker runs anything: the waiting thread runs the host tasks and
// the engine's own steps itself, for every kind of wait.
TEST_CASE("with no TBB worker at all, the waiting thread runs the host tasks itself") {
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  for (Policy p : {Policy::sync, Policy::async}) {
    CAPTURE(to_string(p));
    Controller c(test::options(p));
    auto k = c.kernel("hetflow_test.cl", "scale_in_place");
    auto t = c.tile<float>(64, "t");
    const std::thread::id program = std::this_thread::get_id();
    std::atomic<int> elsewhere{0};
    for (int round = 0; round < 20; ++round) {
      c.host_task(
          "fill",
          [t, round, program, &elsewhere]() mutable {
            if (std::this_thread::get_id() != program) ++elsewhere;
            test::fill(t, float(round));
          },
          out(t));
      c.move_to(t);
      c.launch(k, Range(64), io(t), 64, 2.0f);
      c.move_from(t);
      if (round % 2) {
        c.wait(t);
        CHECK(test::all_equal(t, float(2 * round + 1)));
      }
    }
    c.wait_all();
    CHECK(test::all_equal(t, float(2 * 19 + 1)));
    CHECK(elsewhere == 0);
  }
}

TEST_CASE("failed requests and their cancelled dependants are freed: 10,000 of them") {
  auto o = test::options(Policy::async, 2);
  o.record = false;  // recording keeps every request by design
  Controller c(o);
  auto k = c.kernel("hetflow_test.cl", "scale_in_place");
  auto x = c.tile<float>(1024, "x");
  const long before = detail::Request::live.load();
  for (int i = 0; i < 2500; ++i) {
    c.host_task(
        "fails", [] { throw std::runtime_error("planned"); }, out(x));
    c.move_to(x);                                 // cancelled
    c.launch(k, Range(1024), io(x), 1024, 1.0f);  // cancelled
    c.move_from(x);                               // cancelled
    CHECK_THROWS_AS(c.wait(x), RequestFailed);
  }
  c.wait_all();
  // Every request has ended and been reported; the tracker keeps nothing of them, and none of the
  // 10,000 is still alive (a few may be on their way out of the graph's last tasks).
  CHECK(detail::engine_of(c).tracked_accesses() == 0);
  long alive = 0;
  for (int i = 0; i < 200 && (alive = detail::Request::live.load() - before) > 8; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(alive <= 8);
}

TEST_CASE("the destructor waits for what host tasks and hooks submit while it waits") {
  // Each level, a host task, submits the next: a kernel, its result back, a hook on it, the next
  // level and a move back. A destructor that waited once saw 2-3 of 10 levels run and dropped the
  // rest silently (their requests accepted, never run).
  constexpr int kLevels = 10;
  for (const bool in_order : {false, true}) {
    CAPTURE(in_order);
    std::atomic<int> levels{0}, hooks{0};
    float last = 0;
    {
      // Declared before the controller: its destructor runs the tasks that use them.
      std::function<void(int)> level;
      Tile<float> t;
      Kernel k;
      auto o = test::options(Policy::async);
      if (in_order) o.queue_order = QueueOrder::in_order;
      Controller c(o);
      k = c.kernel("hetflow_test.cl", "scale_in_place");
      t = c.tile<float>(16, "t");
      test::fill(t, 0.0f);
      c.move_to(t);
      level = [&](int d) {
        ++levels;
        if (d + 1 == kLevels) {
          last = t[0];
          return;
        }
        c.launch(k, Range(16), io(t), 16, 2.0f);  // x = 2x + 1
        c.move_from(t);
        c.on_ready(
            "hook", [&](const Outcome& outcome) { hooks += outcome.ok() ? 1 : 0; }, in(t));
        c.host_task(
            "level", [&, d] { level(d + 1); }, io(t));
        c.move_to(t);
      };
      c.host_task(
          "level", [&] { level(0); }, io(t));
    }
    CHECK(levels == kLevels);
    CHECK(hooks == kLevels - 1);
    CHECK(last == float((1 << (kLevels - 1)) - 1));  // x = 2x + 1, nine times from 0
  }
}

TEST_CASE("wait_all() and wait(t) wait for what host tasks and hooks submit while they wait, levels deep") {
  // A host task (on another tile, or on t) submits a kernel on t, its result back, a hook and, a
  // level down, another such task. A wait that waited once returned with the follow-ups still
  // running: t read stale in 23-160 of 300 rounds (found by a user's program), a hook's failure
  // reported only at the controller's end.
  constexpr int kLevels = 3, kRounds = 40;
  for (const bool wait_all : {true, false}) {
    CAPTURE(wait_all);
    std::function<void(int)> level;  // before the controller: its destructor may run the tasks using it
    std::atomic<int> hooks{0};
    Controller c(test::options(Policy::async));
    auto k = c.kernel("hetflow_test.cl", "scale_in_place");
    auto t = c.tile<float>(256, "t");
    auto gate = c.tile<float>(1, "gate");
    // Under wait_all the tasks touch another tile only; wait(t) waits for the tasks on t.
    const auto on = [&] { return wait_all ? in(gate) : in(t); };
    level = [&](int d) {
      c.launch(k, Range(256), io(t), 256, 2.0f);  // x = 2x + 1
      c.move_from(t);
      c.on_ready(
          "hook", [&](const Outcome& o) { hooks += o.ok() ? 1 : 0; }, in(t));
      if (d + 1 < kLevels) {
        c.move_to(t);
        c.host_task(
            "level", [&, d] { level(d + 1); }, on());
      }
    };
    for (int round = 0; round < kRounds; ++round) {
      CAPTURE(round);
      test::fill(t, 0.0f);
      hooks = 0;
      c.move_to(t);
      c.host_task(
          "level", [&] { level(0); }, on());
      if (wait_all)
        c.wait_all();
      else
        c.wait(t);
      REQUIRE(t[0] == float((1 << kLevels) - 1));  // x = 2x + 1, three times from 0
      if (wait_all) REQUIRE(hooks == kLevels);
      c.wait_all();
    }
  }
  // A hook that throws, submitted by a host task: the wait_all that waited for the task reports it.
  Controller c(test::options(Policy::async));
  auto gate = c.tile<float>(1, "gate");
  for (int round = 0; round < 10; ++round) {
    c.host_task(
        "submitter",
        [&] {
          c.on_ready(
              "throwing-hook", [](const Outcome&) { throw std::runtime_error("hook failed"); }, in(gate));
        },
        in(gate));
    CHECK_THROWS_WITH_AS(c.wait_all(), doctest::Contains("throwing-hook"), RequestFailed);
  }
}

TEST_CASE("a producer that outruns its host tasks holds at most max_in_flight of them, nested submissions never held") {
  // No limit before: 300,000 queued host tasks took 292 MB (~1 KB each; found by a user's program).
  for (const int threads : {0, 1}) {  // 0: TBB's default; 1: no worker, the waiting thread runs them
    CAPTURE(threads);
    std::optional<tbb::global_control> one;
    if (threads == 1) one.emplace(tbb::global_control::max_allowed_parallelism, 1);
    auto o = test::options(Policy::async);
    o.max_in_flight = 200;
    Controller c(o);
    auto t = c.tile<int>(1, "t");
    t[0] = 0;
    std::atomic<long> ran{0};
    long submitted = 0, most_queued = 0;
    // The first one takes long enough for the program to reach the limit behind it.
    c.host_task(
        "slow", [] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, io(t));
    ++submitted;
    for (int i = 0; i < 3000; ++i) {
      c.host_task(
          "step",
          [&] {
            ++t[0];
            ++ran;
          },
          io(t));
      most_queued = std::max(most_queued, ++submitted - ran.load() - 1);  // less the slow one, running
    }
    // A host task submitting many more than the limit is not held back (it would wait for itself).
    c.host_task(
        "producer",
        [&] {
          for (int i = 0; i < 1000; ++i)
            c.host_task(
                "nested", [&] { ++t[0]; }, io(t));
        },
        in(c.tile<int>(1, "unrelated")));
    c.wait_all();
    CHECK(t[0] == 4000);
    MESSAGE("at most " << most_queued << " host tasks queued at once");
    CHECK(most_queued <= 200);
    CHECK(most_queued >= 150);  // held back at the limit, behind the slow one
  }
}

TEST_CASE("on_ready is never held back by max_in_flight: a program thread is told without blocking") {
  // It waited for everything before it once the limit was reached (a user's program: 500 ms behind
  // one slow host task at max_in_flight 1), though a hook is the way to be told without blocking.
  auto o = test::options(Policy::async);
  o.max_in_flight = 1;
  Controller c(o);
  auto t = c.tile<int>(1, "t"), u = c.tile<int>(1, "u");
  std::atomic<bool> hook_submitted{false}, saw_it{false};
  // The slow task ends only once the program is past on_ready, or after 20 s (then saw_it stays false).
  c.host_task(
      "slow",
      [&] {
        for (int i = 0; i < 20'000 && !hook_submitted.load(); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        saw_it = hook_submitted.load();
      },
      io(t));
  std::atomic<int> told{0};
  c.on_ready(
      "told", [&](const Outcome& oc) { told = oc.ok() ? 1 : 2; }, in(u));
  hook_submitted = true;
  c.wait_all();
  CHECK(saw_it.load());
  CHECK(told.load() == 1);
}

TEST_CASE("a controller whose own hook or host task drops its last reference ends after that task, its work done") {
  // A shared_ptr<Controller> captured by its tasks: the last one to go ran ~Controller inside the
  // controller's own task, whose wait was refused there and retried for good (a core spinning, the
  // work after it never run). Now it ends on a thread of its own once the task has returned.
  // Modes: a hook resets its copy; a host task resets its copy; a host task's capture goes with the
  // task's callable (the engine drops it after the task ran).
  for (const int mode : {0, 1, 2}) {
    CAPTURE(mode);
    const long live_before = detail::Request::live.load();
    std::atomic<bool> dropped{false}, after_ran{false};
    Tile<int> t;
    {
      auto c = std::make_shared<Controller>(test::options(Policy::async));
      t = c->tile<int>(1, "t");
      c->host_task(
          "fill", [t]() mutable { t[0] = 1; }, out(t));
      // Submitted by the task before it lets go: the controller's end must still run it.
      auto last = [c, t, &dropped, &after_ran, mode]() mutable {
        c->host_task(
            "after", [t, &after_ran]() mutable { after_ran = t[0] == 1; }, in(t));
        if (mode != 2) c.reset();  // the last reference: ~Controller runs here, in its own task
        dropped = true;
      };
      if (mode == 0)
        c->on_ready(
            "last", [last](const Outcome&) mutable { last(); }, in(t));
      else
        c->host_task("last", last, in(t));
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((!after_ran || detail::Request::live.load() > live_before) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(dropped);
    CHECK(after_ran);
    CHECK(detail::Request::live.load() == live_before);  // the engine ended, its requests with it
    CHECK(t[0] == 1);                                    // the tile outlives its controller
  }
}
