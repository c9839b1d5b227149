// RegionWork (src/loop_region_work.hpp), pure logic: what a loop's calls teach of where its work
// lies. Each "call" here cuts [0, n) into chunks, each run by one side at that side's speed over a
// cost profile the test knows; RegionWork sees only the chunks' places and seconds.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "loop_region_work.hpp"

using hetflow::detail::RegionWork;

namespace {

struct Cut {
  std::size_t end;  // the chunk is [previous end, end)
  unsigned side;
};

// One call over [0, n): each chunk's seconds are its iterations' costs (cost(i), mean 1 over the
// range) over its side's speed (mean-cost iterations a second).
void call(RegionWork& r, std::size_t n, const std::vector<Cut>& cuts, const std::vector<double>& speed,
          const std::function<double(std::size_t)>& cost) {
  r.restart(n);
  std::size_t begin = 0;
  for (const Cut& c : cuts) {
    double work = 0;
    for (std::size_t i = begin; i < c.end; ++i) work += cost(i);
    r.record(c.side, begin, c.end - begin, work / speed[c.side]);
    begin = c.end;
  }
}

}  // namespace

TEST_CASE("over a regular range work is the iteration count, exactly") {
  RegionWork r(3);
  const std::size_t n = 100'003;
  auto flat = [](std::size_t) { return 1.0; };
  for (int k = 0; k < 5; ++k)
    call(r, n, {{n / 3 + std::size_t(k) * 101, 0}, {2 * n / 3, 2}, {n, 1}}, {2e6, 1e6, 4e4}, flat);
  r.restart(n);
  CHECK_FALSE(r.irregular());
  CHECK(r.describe() == "work by region: regular (learned from 5 calls)");
  CHECK(r.work(12'345, 678) == 678.0);
  CHECK(r.within(12'345, 678.0, n, true) == 678);
  CHECK(r.within(12'345, 677.5, n, true) == 678);
  CHECK(r.within(12'345, 677.5, n, false) == 677);
  CHECK(r.within(n - 10, 678.0, 10, true) == 10);
}

TEST_CASE("two sides of one kind learn where the work lies, wherever each ran") {
  // The first quarter costs a tenth of the rest's share: weights 0.1 / 1.3 (mean 1).
  const std::size_t n = 8192;
  auto cost = [n](std::size_t i) { return i < n / 4 ? 0.1 : 1.3; };
  RegionWork r(2);
  r.same_speed({0, 0});
  // The same split every call: side 0 the cheap front and some, side 1 the rest.
  for (int k = 0; k < 3; ++k) call(r, n, {{3 * n / 8, 0}, {n, 1}}, {1e6, 1e6}, cost);
  r.restart(n);
  REQUIRE(r.irregular());
  // Known at the chunks' edge (between edges nothing finer is known): each side's part's work.
  CHECK(r.work(0, 3 * n / 8) == doctest::Approx(0.1 * double(n / 4) + 1.3 * double(n / 8)).epsilon(0.01));
  CHECK(r.work(3 * n / 8, n - 3 * n / 8) == doctest::Approx(1.3 * double(n - 3 * n / 8)).epsilon(0.01));
  CHECK(r.work(0, n) == doctest::Approx(double(n)).epsilon(1e-9));
  CHECK(r.weight_at(0) < 0.6);  // the front part's mean: 1536 / 3072
  CHECK(r.weight_at(n - 1) == doctest::Approx(1.3).epsilon(0.01));
  CHECK(r.describe() ==
        "work by region (1 = the mean) at each tenth of the range: 0.5 0.5 0.5 0.5 1.3 1.3 1.3 1.3 "
        "1.3 1.3 (learned from 3 calls)");
  // within() inverts work(): the iterations from the front holding half the range's work.
  const std::size_t half = r.within(0, 0.5 * double(n), n, true);
  CHECK(r.work(0, half) >= 0.5 * double(n));
  CHECK(r.work(0, half - 1) < 0.5 * double(n));
}

TEST_CASE("sides of unknown kinds that keep to their parts are taken as they ran: the range stays regular") {
  // What the calls cannot tell: side 0 fast on a cheap part, or as fast as side 1 on a dear one.
  const std::size_t n = 8192;
  auto cost = [n](std::size_t i) { return i < n / 4 ? 0.1 : 1.3; };
  RegionWork r(2);
  for (int k = 0; k < 3; ++k) call(r, n, {{n / 4, 0}, {n, 1}}, {1e6, 1e6}, cost);
  r.restart(n);
  CHECK_FALSE(r.irregular());
  CHECK(r.work(0, n / 4) == double(n / 4));
}

TEST_CASE("sides of different speeds are told apart by calls that split the range differently") {
  // A device 20x the CPU's workers together, on a range whose second half costs 3x the first.
  const std::size_t n = 40'000;
  auto cost = [n](std::size_t i) { return i < n / 2 ? 0.5 : 1.5; };
  RegionWork r(2);
  const std::vector<double> speed{2e6, 1e5};
  for (std::size_t split : {30'000u, 36'000u, 33'000u, 38'000u}) call(r, n, {{split, 0}, {n, 1}}, speed, cost);
  r.restart(n);
  REQUIRE(r.irregular());
  // At the chunks' edges (nothing finer is known: no edge lies at n / 2), and between two of them;
  // within 3 %: the speeds lean a little on each side's mean (kLeanOnMean).
  CHECK(r.work(0, 30'000) == doctest::Approx(0.5 * 20'000 + 1.5 * 10'000).epsilon(0.03));
  CHECK(r.work(30'000, 10'000) == doctest::Approx(1.5 * 10'000).epsilon(0.03));
  CHECK(r.work(33'000, 3'000) == doctest::Approx(1.5 * 3'000).epsilon(0.03));
}

TEST_CASE("a call with a chunk not measured, or not covering its range, teaches nothing") {
  const std::size_t n = 8192;
  auto cost = [n](std::size_t i) { return i < n / 4 ? 0.1 : 1.3; };
  RegionWork r(2);
  r.same_speed({0, 0});
  for (int k = 0; k < 3; ++k) {
    r.restart(n);
    r.record(0, 0, 3 * n / 8, (0.1 * double(n / 4) + 1.3 * double(n / 8)) / 1e6, /*measured=*/false);
    r.record(1, 3 * n / 8, n - 3 * n / 8, 1.3 * double(n - 3 * n / 8) / 1e6);
  }
  r.restart(n);
  CHECK_FALSE(r.irregular());
  for (int k = 0; k < 3; ++k) {  // a failed call: its last chunk never reported
    r.restart(n);
    r.record(0, 0, 3 * n / 8, (0.1 * double(n / 4) + 1.3 * double(n / 8)) / 1e6);
  }
  r.restart(n);
  CHECK_FALSE(r.irregular());
  // The control: the same calls, every chunk measured and reported, teach it.
  for (int k = 0; k < 3; ++k) call(r, n, {{3 * n / 8, 0}, {n, 1}}, {1e6, 1e6}, cost);
  r.restart(n);
  CHECK(r.irregular());
}
