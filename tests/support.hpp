#pragma once
// Shared helpers for the engine's integration tests (real OpenCL device: PoCL here).
#include <doctest/doctest.h>
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace test {

// Sleeps the test thread (not the engine) in 1 ms steps until `done` or 30 s have passed; whether it came.
inline bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done();
}
inline bool eventually(const std::atomic<bool>& flag) {
  return eventually([&flag] { return flag.load(); });
}

// An environment variable set for a scope (the engine reads HETFLOW_DEBUG_* when a controller starts).
struct Env {
  Env(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~Env() { ::unsetenv(name_); }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  const char* name_;
};

// A local size other than a kernel's reqd_work_group_size reaches the driver, which refuses the
// enqueue: the one driver failure every device gives, for tests of how failures are reported.
inline Env driver_sees_wrong_local_sizes() { return Env("HETFLOW_DEBUG_UNCHECKED_LOCAL_SIZE", "1"); }

inline hetflow::ControllerOptions options(hetflow::Policy p, unsigned kernel_queues = 1) {
  hetflow::ControllerOptions o;
  o.policy = p;
  o.kernel_queues = kernel_queues;
  o.record = true;
  return o;
}

template <class T>
void fill(hetflow::Tile<T>& t, T v) {
  std::fill(t.data(), t.data() + t.size(), v);
}

template <class T>
bool all_equal(const hetflow::Tile<T>& t, T v) {
  return std::all_of(t.data(), t.data() + t.size(), [&](T x) { return x == v; });
}

// change(t, v) of the validation cases (docs/architecture.md): a host task that sets every element of t to v.
template <class T>
void change(hetflow::Controller& c, hetflow::Tile<T>& t, T v) {
  c.host_task(
      "change(" + t.name() + ")", [t, v]() mutable { fill(t, v); }, hetflow::out(t));
}

// A host task on `t` that runs on a TBB worker until the program opens its gate (or 20 s pass):
// something unrelated still running while the program waits. Made started, so a waiting thread
// that runs the graph's tasks cannot be the one that took it up.
class GatedTask {
 public:
  template <class T>
  GatedTask(hetflow::Controller& c, hetflow::Tile<T>& t) {
    std::promise<void> started;
    auto on_worker = started.get_future();
    c.host_task(
        "waits for the program",
        [gate = gate_, state = state_, started = std::make_shared<std::promise<void>>(std::move(started))] {
          started->set_value();
          if (gate.wait_for(std::chrono::seconds(20)) != std::future_status::ready) *state = true;
        },
        hetflow::out(t));
    on_worker.wait();
  }
  void open() { open_.set_value(); }
  bool timed_out() const { return *state_; }  // the program did not open it in time

 private:
  std::promise<void> open_;
  std::shared_future<void> gate_ = open_.get_future().share();
  std::shared_ptr<std::atomic<bool>> state_ = std::make_shared<std::atomic<bool>>(false);
};

struct Interval {
  std::int64_t start = -1, end = -1;
  bool overlaps(const Interval& o) const { return start < o.end && o.start < end; }
};

// The nth record named `name` (device times from OpenCL profiling).
inline Interval interval(const std::vector<hetflow::RequestRecord>& recs, const std::string& name, int nth = 0) {
  for (const auto& r : recs)
    if (r.name == name && nth-- == 0) {
      REQUIRE_MESSAGE(r.start_ns >= 0, "no profiling times for " << name);
      return {r.start_ns, r.end_ns};
    }
  FAIL("no record named " << name);
  return {};
}

inline std::string policy_name(hetflow::Policy p) { return hetflow::to_string(p); }

// A fresh tile through move_to, a kernel and move_from comes back right: the controller works.
inline void check_still_works(hetflow::Controller& c) {
  auto k = c.kernel("hetflow_test.cl", "scale_in_place");
  auto x = c.tile<float>(128, "after");
  fill(x, 3.0f);
  c.move_to(x);
  c.launch(k, hetflow::Range(128), hetflow::io(x), 128, 2.0f);
  c.move_from(x);
  c.wait(x);
  CHECK(all_equal(x, 7.0f));
}

// The set-up of the validation cases (docs/architecture.md): a recording controller and K(in a, out b), one
// work-group copying a into b `repeat` passes long (kernels_cl/hetflow_test.cl: copy_loop).
struct AppendixCase {
  explicit AppendixCase(hetflow::Policy p) : c(options(p, 1)), k(c.kernel("hetflow_test.cl", "copy_loop")) {}
  void K(hetflow::Tile<float>& a, hetflow::Tile<float>& b, int repeat) {
    c.launch(k, hetflow::Range(64).local(64), hetflow::in(a), hetflow::out(b), int(a.size()), repeat);
  }
  hetflow::Controller c;
  hetflow::Kernel k;
};

// The requests of T-07 on fresh tiles of n floats a=1, b=0 with a long kernel: the second
// move_to(a) must wait for the kernel reading a (WAR). Ends with wait_all; returns (a, b).
inline std::vector<hetflow::Tile<float>> run_t07(AppendixCase& t, std::size_t n) {
  auto a = t.c.tile<float>(n, "a"), b = t.c.tile<float>(n, "b");
  fill(a, 1.0f);
  fill(b, 0.0f);
  t.c.move_to(a);
  t.c.wait_all();
  change(t.c, a, 2.0f);
  t.c.wait_all();
  t.K(a, b, 20000);
  t.c.move_to(a);
  t.c.move_from(b);
  t.c.move_from(a);
  t.c.wait_all();
  return {a, b};
}

// The requests of T-05 (with_d = false) and T-06 on fresh tiles of n floats a=1, b=0, c=2, d=3;
// `sync_before_change` is the original sequence's sync before change(c,0), which tracking host
// tasks' accesses (docs/architecture.md, "Hazards") makes unnecessary. Ends with wait_all; returns the tiles (a, b, c,
// d).
inline std::vector<hetflow::Tile<float>> run_t05_t06(AppendixCase& t, std::size_t n, bool with_d,
                                                     bool sync_before_change) {
  auto a = t.c.tile<float>(n, "a"), b = t.c.tile<float>(n, "b"), c = t.c.tile<float>(n, "c"),
       d = t.c.tile<float>(n, "d");
  fill(a, 1.0f);
  fill(b, 0.0f);
  fill(c, 2.0f);
  fill(d, 3.0f);
  t.c.move_to(a);
  t.c.move_to(c);
  if (sync_before_change) t.c.wait_all();
  change(t.c, c, 0.0f);
  t.c.wait_all();
  t.K(a, b, 4);
  t.c.move_from(c);
  if (with_d) t.c.move_to(d);
  t.c.move_from(b);
  t.c.wait_all();
  return {a, b, c, d};
}

// A loop's CPU body that sleeps each iteration until the next `tick` after at least half of one,
// counted from the helper's making, then runs `body` on the chunk: every CPU worker's pieces (of one
// iteration) end together, whichever thread runs them.
inline std::function<void(hetflow::Chunk)> on_ticks(std::function<void(hetflow::Chunk)> body,
                                                    std::chrono::milliseconds tick) {
  return [body = std::move(body), tick, epoch = std::chrono::steady_clock::now()](hetflow::Chunk ch) {
    for (std::size_t i = 0; i < ch.size(); ++i) {
      const auto since = std::chrono::steady_clock::now() - epoch + tick / 2;
      std::this_thread::sleep_until(epoch + (since / tick + 1) * tick);
    }
    body(ch);
  };
}

}  // namespace test
