// The completion poller (src/completion_poller.hpp) with a fake check, no OpenCL: when it looks.
// Its intervals are set long here (a second), so what a hint changes stands far apart from what
// the regular schedule does, whatever else runs on the machine.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "completion_poller.hpp"
#include "precise_sleeps.hpp"

using hetflow::detail::CompletionPoller;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
struct Checks {
  std::atomic<int> count{0};
  std::atomic<Clock::rep> first_at{0};  // since the epoch of Clock
  bool operator()() {
    Clock::rep none = 0;
    first_at.compare_exchange_strong(none, Clock::now().time_since_epoch().count());
    ++count;
    return false;
  }
  double first_after(Clock::time_point t0) const {
    return std::chrono::duration<double>(Clock::time_point(Clock::duration(first_at.load())) - t0).count();
  }
};

bool wait_for(const std::atomic<int>& count, int at_least, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (count.load() < at_least && Clock::now() < end) std::this_thread::sleep_for(1ms);
  return count.load() >= at_least;
}
}  // namespace

TEST_CASE("an expected end makes the poller check then, long before its interval would") {
  Checks checks;
  CompletionPoller poller([&] { return checks(); });
  poller.set_intervals(1'000'000us, 10'000'000us);
  const auto t0 = Clock::now();
  poller.hold();
  poller.expect(t0 + 20ms);
  REQUIRE(wait_for(checks.count, 1, 900ms));
  CHECK(checks.first_after(t0) >= 0.019);
  CHECK(checks.first_after(t0) < 0.9);  // the regular schedule's first check: 1 s
  poller.release();
}

TEST_CASE("an expected end that has passed makes the poller check at once") {
  Checks checks;
  CompletionPoller poller([&] { return checks(); });
  poller.set_intervals(1'000'000us, 10'000'000us);
  const auto t0 = Clock::now();
  poller.hold();
  poller.expect(t0 - 1s);
  CHECK(wait_for(checks.count, 1, 900ms));
  poller.release();
}

TEST_CASE("a later expected end never puts off the regular checks, and nothing is checked while none waits") {
  Checks checks;
  CompletionPoller poller([&] { return checks(); });
  poller.set_intervals(20'000us, 20'000us);
  poller.hold();
  poller.expect(Clock::now() + 60s);
  CHECK(wait_for(checks.count, 3, 5000ms));  // every 20 ms, not after a minute
  poller.release();
  std::this_thread::sleep_for(100ms);  // a check under way when released may still end
  const int after_release = checks.count.load();
  std::this_thread::sleep_for(200ms);
  CHECK(checks.count.load() == after_release);
}

#ifdef __linux__
// Linux wakes a sleeping thread up to its timer slack late (50 us by default): a loop call's
// watching thread, looking at its last chunk every 20 us, looked every ~70 (perf/RESULTS.md,
// 2026-11-27 06:10Z). It sleeps with 1 us of slack, and has its own back when the call ends. The
// completion poller keeps the default: with 1 us Sobel 4K, which it serves, was not faster
// (perf/RESULTS.md, 2026-11-27 06:12Z).
TEST_CASE("a precise-sleeps scope sets 1 us of timer slack, and the thread's own comes back after it") {
  const long before = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  REQUIRE(before > 1000);  // Linux's default is 50,000 ns
  {
    const hetflow::detail::PreciseSleeps precise;
    CHECK(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == 1000);
  }
  CHECK(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == before);
}
#endif
