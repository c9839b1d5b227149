// When the streaming node flushes its queues (src/flush_policy.hpp), and the completion poller's
// flush of what the node held back when it ran dry (src/completion_poller.hpp), without OpenCL.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "completion_poller.hpp"
#include "flush_policy.hpp"

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

// The streaming node, run dry, asks the poller to flush (StreamingStep::enqueue): with nothing else
// to watch, the poller must still do it, soon, once per request however many asked meanwhile, and
// again for a later burst — after a flush it stays awake, so that one needs no wake-up.
TEST_CASE("the completion poller flushes soon what the streaming node held back, once per request") {
  using namespace std::chrono;
  std::atomic<int> flushes{0};
  hetflow::detail::CompletionPoller poller([] { return false; }, [&] { flushes.fetch_add(1); });
  auto wait_for_flushes = [&](int n) {
    const auto deadline = steady_clock::now() + seconds(5);
    while (flushes.load() < n && steady_clock::now() < deadline) std::this_thread::sleep_for(microseconds(50));
    return flushes.load() >= n;
  };
  const auto asked = steady_clock::now();
  for (int i = 0; i < 100; ++i) poller.flush_soon();  // while one is due: no more are made
  REQUIRE(wait_for_flushes(1));
  MESSAGE("first flush after " << duration<double, std::micro>(steady_clock::now() - asked).count() << " us");
  std::this_thread::sleep_for(milliseconds(2));
  CHECK(flushes.load() == 1);
  poller.flush_soon();  // awake still: ticks into it
  CHECK(wait_for_flushes(2));
  std::this_thread::sleep_for(milliseconds(20));  // past the awake time: asleep until asked
  CHECK(flushes.load() == 2);
  poller.flush_soon();  // wakes it
  CHECK(wait_for_flushes(3));
  poller.flush_soon();  // due at destruction: the destructor does not wait for it, nor hang
}
