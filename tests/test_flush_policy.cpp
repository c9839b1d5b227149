// When the streaming node flushes its queues (src/flush_policy.hpp), without OpenCL.
#include <doctest/doctest.h>

#include <vector>

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
  CHECK(p.idle(0, f.fn()));
  CHECK(f.seen == std::vector<unsigned>{1, 3});
  CHECK_FALSE(p.idle(0, f.fn()));
  CHECK(f.seen.size() == 2);
  for (unsigned q = 0; q < 4; ++q) CHECK_FALSE(p.dirty(q));
}

TEST_CASE("a queue flushed for a dependant is clean until its next command") {
  FlushPolicy p(2, 100, 1'000'000);
  Flushes f;
  p.enqueued(0, 0, f.fn());
  CHECK(p.dirty(0));
  p.flushed(0);  // the streaming node flushed it before a command on queue 1 waited on it
  CHECK_FALSE(p.dirty(0));
  CHECK_FALSE(p.idle(0, f.fn()));
  CHECK(f.seen.empty());
}

TEST_CASE("running dry, a queue not flushed within max_age goes at once: a lone command never waits") {
  FlushPolicy p(2, 100, 50);
  Flushes f;
  p.enqueued(1, 1000, f.fn());
  CHECK_FALSE(p.idle_at(1000, f.fn()));  // never flushed before
  CHECK(f.seen == std::vector<unsigned>{1});
  p.enqueued(1, 1100, f.fn());
  CHECK_FALSE(p.idle_at(1100, f.fn()));  // flushed 100 ago
  CHECK(f.seen == std::vector<unsigned>{1, 1});
  CHECK_FALSE(p.dirty(1));
}

TEST_CASE("running dry soon after a flush, the flush is put off and owed; idle() pays it") {
  FlushPolicy p(2, 100, 50);
  Flushes f;
  p.enqueued(0, 1000, f.fn());
  CHECK_FALSE(p.idle_at(1000, f.fn()));
  p.enqueued(0, 1010, f.fn());
  CHECK(p.idle_at(1010, f.fn()));  // flushed 10 ago: put off
  CHECK(f.seen == std::vector<unsigned>{0});
  CHECK(p.dirty(0));
  p.enqueued(0, 1020, f.fn());
  CHECK(p.idle_at(1020, f.fn()));  // still owed, still one flush
  CHECK(f.seen.size() == 1);
  CHECK(p.idle(1060, f.fn()));  // the poller's thread pays it
  CHECK(f.seen == std::vector<unsigned>{0, 0});
  CHECK_FALSE(p.dirty(0));
  CHECK_FALSE(p.idle(1110, f.fn()));  // nothing owed any more
  // A burst that keeps the node busy still flushes by age at its enqueues, put off or not.
  p.enqueued(0, 1100, f.fn());
  CHECK(p.idle_at(1100, f.fn()));  // flushed 40 ago
  p.enqueued(0, 1160, f.fn());     // its oldest has waited 60
  CHECK(f.seen == std::vector<unsigned>{0, 0, 0});
}
