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
