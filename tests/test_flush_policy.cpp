// When the streaming node flushes its queues (src/flush_policy.hpp), without OpenCL; then, on the
// default device, whether it needs a flush when the engine runs dry (src/unflushed_probe.hpp) and
// that commands nobody waits for reach it either way.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "flush_policy.hpp"
#include "hetflow/hetflow.hpp"
#include "process.hpp"
#include "support.hpp"

using hetflow::detail::FlushPolicy;

namespace {
struct Flushes {
  std::vector<unsigned> seen;
  auto fn() {
    return [this](unsigned q) { seen.push_back(q); };
  }
};
}  // namespace

TEST_CASE("a burst on one queue is flushed every max_commands, not per command") {
  FlushPolicy p(3, 4, 1'000'000);
  Flushes f;
  for (int i = 0; i < 12; ++i) p.enqueued(2, i, f.fn());
  CHECK(f.seen == std::vector<unsigned>{2, 2, 2});
  CHECK_FALSE(p.dirty(2));
  p.enqueued(2, 13, f.fn());
  CHECK(p.dirty(2));
  CHECK(f.seen.size() == 3);
}

TEST_CASE("without burst flushes a queue is flushed only when asked: by a waiter, a dependant or idle()") {
  FlushPolicy p(2, 4, 50);
  p.drop_burst_flushes();
  Flushes f;
  for (int i = 0; i < 100; ++i) p.enqueued(i % 2, i * 100, f.fn());  // past both the count and the age
  CHECK(f.seen.empty());
  CHECK(p.dirty(0));
  CHECK(p.dirty(1));
  p.flush_if_dirty(1, f.fn());
  CHECK(f.seen == std::vector<unsigned>{1});
  CHECK(p.idle(f.fn()));
  CHECK(f.seen == std::vector<unsigned>{1, 0});
  CHECK_FALSE(p.dirty(0));
}

TEST_CASE("a queue whose oldest unflushed command is max_age old is flushed at the next enqueue anywhere") {
  FlushPolicy p(3, 100, 50);
  Flushes f;
  p.enqueued(0, 0, f.fn());
  p.enqueued(1, 10, f.fn());
  CHECK(f.seen.empty());
  p.enqueued(1, 49, f.fn());
  CHECK(f.seen.empty());
  p.enqueued(2, 50, f.fn());  // queue 0 has waited 50
  CHECK(f.seen == std::vector<unsigned>{0});
  CHECK(p.dirty(1));
  CHECK(p.dirty(2));
  // The age counts from the first command after a flush, not from the first ever.
  p.enqueued(0, 60, f.fn());
  p.enqueued(1, 61, f.fn());  // queue 1's oldest is 10: due
  CHECK(f.seen == std::vector<unsigned>{0, 1});
  CHECK(p.dirty(0));
}

// The clock is read per enqueue only where the time is used (a clock read per request is a cost
// the pipelined path pays on NVIDIA and PoCL, which run unflushed commands): without burst flushes,
// never (only a burst's age needs it); with them, once per enqueue.
TEST_CASE("the flush policy reads the clock only where it uses the time") {
  Flushes f;
  int reads = 0;
  const auto clock = [&reads] {
    ++reads;
    return std::int64_t(reads) * 10;
  };
  FlushPolicy quiet(2, 4, 1'000'000);
  quiet.drop_burst_flushes();
  for (int i = 0; i < 5; ++i) quiet.enqueued(0, clock, f.fn());
  quiet.flush(0, f.fn());
  quiet.enqueued(0, clock, f.fn());  // clean again: its oldest unflushed command would be timed
  CHECK(reads == 0);
  CHECK(quiet.dirty(0));
  reads = 0;
  FlushPolicy bursts(2, 4, 1'000'000);
  for (int i = 0; i < 3; ++i) bursts.enqueued(1, clock, f.fn());
  CHECK(reads == 3);  // the age test needs the time at every enqueue
  CHECK(f.seen == std::vector<unsigned>{0});
}

TEST_CASE("idle flushes exactly the dirty queues, once") {
  FlushPolicy p(4, 100, 1'000'000);
  Flushes f;
  p.enqueued(1, 0, f.fn());
  p.enqueued(3, 0, f.fn());
  p.enqueued(3, 0, f.fn());
  CHECK(p.idle(f.fn()));
  CHECK(f.seen == std::vector<unsigned>{1, 3});
  CHECK_FALSE(p.idle(f.fn()));
  CHECK(f.seen.size() == 2);
  for (unsigned q = 0; q < 4; ++q) CHECK_FALSE(p.dirty(q));
}

TEST_CASE("a queue flushed for a dependant or a waiter is clean until its next command") {
  FlushPolicy p(2, 100, 1'000'000);
  Flushes f;
  p.enqueued(0, 0, f.fn());
  CHECK(p.dirty(0));
  p.flush(0, f.fn());  // for a command on queue 1 about to wait on it, or for a waiter
  CHECK(f.seen == std::vector<unsigned>{0});
  CHECK_FALSE(p.dirty(0));
  CHECK_FALSE(p.idle(f.fn()));
  CHECK(f.seen.size() == 1);
}

TEST_CASE("a flush asked for a queue with nothing new is not made") {
  FlushPolicy p(2, 100, 1'000'000);
  Flushes f;
  p.enqueued(1, 0, f.fn());
  CHECK(p.idle(f.fn()));  // the streaming node ran dry
  CHECK(f.seen == std::vector<unsigned>{1});
  p.flush_if_dirty(1, f.fn());  // then a wait on that command: submitted already
  p.flush_if_dirty(0, f.fn());
  CHECK(f.seen.size() == 1);
  p.enqueued(1, 1, f.fn());
  p.flush_if_dirty(1, f.fn());
  CHECK(f.seen == std::vector<unsigned>{1, 1});
}

TEST_CASE("a flush covers only the commands enqueued before it began") {
  // Another thread's flush (a waiter's) runs beside the streaming node's enqueues: a command
  // enqueued while that clFlush is under way may have missed it, so the queue stays dirty.
  FlushPolicy p(1, 100, 1'000'000);
  Flushes f;
  p.enqueued(0, 0, f.fn());
  p.flush(0, [&](unsigned q) {
    f.seen.push_back(q);
    p.enqueued(0, 1, f.fn());
  });
  CHECK(p.dirty(0));
  CHECK(p.idle(f.fn()));
  CHECK_FALSE(p.dirty(0));
  CHECK(f.seen == std::vector<unsigned>{0, 0});
}

namespace {
struct IdleFlushEnv {
  explicit IdleFlushEnv(bool forced) {
    if (forced) ::setenv("HETFLOW_DEBUG_IDLE_FLUSH", "1", 1);
  }
  ~IdleFlushEnv() { ::unsetenv("HETFLOW_DEBUG_IDLE_FLUSH"); }
};

std::string idle_flush_of(const hetflow::Controller& c) { return hetflow::graph_info(c).options.at("idle_flush"); }
}  // namespace

TEST_CASE("a controller says whether it flushes when it runs dry, and why") {
  using namespace hetflow;
  {
    Controller c(test::options(Policy::async));
    const std::string said = idle_flush_of(c);
    CAPTURE(said);
    // What the start-up check saw: an unflushed write that ended (off) or did not (on).
    const bool off = said.starts_with("off (an unflushed 4-byte write ended within ");
    const bool on = said.starts_with("on (an unflushed 4-byte write had not ended after ");
    CHECK((off || on));
    CHECK(said.ends_with(" us)"));
  }
  {
    IdleFlushEnv forced(true);
    Controller c(test::options(Policy::async));
    CHECK(idle_flush_of(c) == "on (HETFLOW_DEBUG_IDLE_FLUSH=1)");
  }
  Controller sync(test::options(Policy::sync));
  CHECK(idle_flush_of(sync).starts_with("n/a"));
}

TEST_CASE("commands nobody waits for reach the device, with the idle flush on or off") {
  // move_to, a burst of kernels (more than a burst flush's 8), move_from, then no wait: the host
  // image is watched change by itself. The D2H's own queue is flushed by nothing but the idle
  // flush, or not at all where the start-up check found the device runs unflushed commands (then
  // the kernels' queue is flushed only for the D2H that waits on it); a wrong verdict leaves the
  // copy unrun.
  using namespace hetflow;
  for (const bool forced : {false, true}) {
    CAPTURE(forced);
    IdleFlushEnv env(forced);
    Controller c(test::options(Policy::async));
    CAPTURE(idle_flush_of(c));
    constexpr std::size_t n = 4096;
    auto t = c.tile<int>(n, "t");
    for (std::size_t i = 0; i < n; ++i) t[i] = int(i);
    Kernel add_one =
        c.kernel_from_source("kernel void add_one(global int* t) { t[get_global_id(0)] += 1; }", "add_one");
    constexpr int launches = 20;
    c.move_to(t);
    for (int k = 0; k < launches; ++k) c.launch(add_one, Range(n), io(t));
    c.move_from(t);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::size_t done = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      done = 0;
      for (std::size_t i = 0; i < n; ++i) done += std::atomic_ref<int>(t.data()[i]).load() == int(i) + launches;
      if (done == n) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHECK(done == n);
    c.wait_all();
  }
}

TEST_CASE("on Oclgrind, which runs nothing unflushed, the idle flush stays on and the commands run") {
  // Oclgrind runs a queue's commands only in a thread that flushes or waits on it (src/driver_lock.hpp):
  // the one device here on which the start-up check must find the flush needed. Its own process,
  // since Oclgrind is registered before the ICD loader starts.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const auto r =
      test::run_command("HETFLOW_DEVICE=oclgrind '" + self + "' -s -tc='commands nobody waits for reach the device*'");
  CAPTURE(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("Status: SUCCESS!") != std::string::npos);
  CHECK(r.output.find(":= on (an unflushed 4-byte write had not ended after") != std::string::npos);
}
