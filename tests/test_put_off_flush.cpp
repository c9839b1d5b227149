// A flush the streaming node puts off (src/flush_policy.hpp: running dry soon after a flush) is
// paid by the completion poller's thread, so commands that nobody waits for still reach the
// device, on the default device through the real OpenCL runtime.
#include <chrono>
#include <thread>

#include "engine.hpp"
#include "support.hpp"

using namespace hetflow;

TEST_CASE("a burst of launches nobody waits for is flushed without another call") {
  Controller c(test::options(Policy::async, 1));
  auto k = c.kernel("hetflow_test.cl", "empty_kernel");
  auto x = c.tile<float>(1, "x");
  c.move_to(x);
  c.wait_all();
  auto& engine = detail::engine_of(c);
  // Back to back, each launch finds the node idle and most of them find their queue flushed a
  // moment ago: the tail of the burst is left for the poller. Bursts until one ends that way (the
  // first does, unless this machine is so slow that every launch takes the policy's 50 us).
  bool left_unflushed = false;
  for (int burst = 0; burst < 20 && !left_unflushed; ++burst) {
    for (int i = 0; i < 8; ++i) c.launch(k, Range(1), io(x));
    left_unflushed = engine.unflushed_commands();
  }
  REQUIRE(left_unflushed);
  // No call on the controller from here: only the poller's thread can flush.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (engine.unflushed_commands() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK_FALSE(engine.unflushed_commands());
  c.wait_all();
}

TEST_CASE("a lone launch after a pause is flushed at once") {
  Controller c(test::options(Policy::async, 1));
  auto k = c.kernel("hetflow_test.cl", "empty_kernel");
  auto x = c.tile<float>(1, "x");
  c.move_to(x);
  c.wait_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));  // past the policy's 50 us
  c.launch(k, Range(1), io(x));
  CHECK_FALSE(detail::engine_of(c).unflushed_commands());
  c.wait_all();
}
