// The heterogeneous loop workloads (tools/workloads/*_loop.hpp) on a real device: the CPU body over
// the whole range, device chunks at offsets that are not multiples of the work-group size, and a
// mix of both each equal the workload's sequential reference.
#include <doctest/doctest.h>
#include <hetflow/hetflow.hpp>

#include <cstddef>
#include <utility>
#include <vector>

#include "workloads/loop_workloads.hpp"

using namespace hetflow;
namespace wl = hetflow::workloads;

namespace {

struct Chunk {
  std::size_t begin, end;
  bool on_device;
};

// [0, 63) and [63, 1000) start off the 64-item work-group boundary and [63, 1000) is rounded up
// past 1000 into the next chunk's iterations, which the kernels must leave alone.
std::vector<Chunk> all_on_device(std::size_t n) { return {{0, 63, true}, {63, 1000, true}, {1000, n, true}}; }
std::vector<Chunk> mixed(std::size_t n) {
  return {{0, 63, true}, {63, 500, false}, {500, 1000, true}, {1000, 1001, false}, {1001, n, true}};
}

// Device chunks are submitted first, then the CPU chunks run here while the device works; their
// regions are disjoint, as in the heterogeneous parallel_for.
template <class W>
void run(Controller& c, W& w, const std::vector<Chunk>& chunks) {
  w.clear_output();
  w.upload(c);
  for (const auto& k : chunks)
    if (k.on_device) w.device(c, k.begin, k.end);
  for (const auto& k : chunks)
    if (!k.on_device) w.cpu(k.begin, k.end);
  for (const auto& k : chunks)
    if (k.on_device) w.fetch(c, k.begin, k.end);
  c.wait_all();
}

// The three ways a chunk can run, each against the reference: with `exact`, bit for bit; otherwise
// within the workload's tolerance, and how many elements are not bit-identical is reported.
template <class W, class Ref>
void check_against(Controller& c, W& w, const Ref& ref, bool exact) {
  const std::size_t n = w.size();
  REQUIRE(n > 1001);
  w.clear_output();
  w.cpu(0, n);
  const auto on_cpu = w.check(ref);
  CHECK_MESSAGE(on_cpu.differing == 0, "CPU body over the whole range: " << on_cpu.str());
  run(c, w, all_on_device(n));
  const auto on_device = w.check(ref);
  CHECK_MESSAGE(on_device.ok(), "device chunks: " << on_device.str());
  if (exact) CHECK_MESSAGE(on_device.differing == 0, "device chunks: " << on_device.str());
  MESSAGE("device chunks against the host: " << on_device.str());
  run(c, w, mixed(n));
  const auto both = w.check(ref);
  CHECK_MESSAGE(both.ok(), "CPU and device chunks: " << both.str());
  if (exact) CHECK_MESSAGE(both.differing == 0, "CPU and device chunks: " << both.str());
}

}  // namespace

TEST_CASE("loop workloads: Mandelbrot by rows equals its reference exactly") {
  Controller c;
  // 97 columns: the x range is rounded up to 128 and the kernel must skip the last 31.
  wl::MandelbrotLoop w(c, {.width = 97, .height = 1100, .max_iter = 300});
  const auto ref = w.reference();
  CHECK(w.size() == 1100);
  CHECK(w.reads().empty());
  CHECK(w.writes(63, 1000).at(0).box == Box{{0, 63, 0}, {97, 937, 1}});
  check_against(c, w, ref, true);
}

TEST_CASE("loop workloads: CSR SpMV on an R-MAT matrix equals its reference exactly") {
  Controller c;
  wl::SpmvLoop w(c, {.scale = 11, .edge_factor = 16});
  const auto ref = w.reference();
  CHECK(w.size() == 2048);
  CHECK(w.reads().size() == 1);
  CHECK(w.constants().size() == 3);
  CHECK(w.writes(63, 1000).at(0).box == Box{{63, 0, 0}, {937, 1, 1}});
  // Both kernels on whatever device this is (by default a CPU device runs the serial one): rows up to
  // hundreds of nonzeros long, split over 32 lanes or kept on one work-item, the same sums.
  for (auto k :
       {wl::SpmvLoop::DeviceKernel::by_device, wl::SpmvLoop::DeviceKernel::lanes, wl::SpmvLoop::DeviceKernel::serial}) {
    CAPTURE(int(k));
    w.set_device_kernel(k);
    check_against(c, w, ref, true);
  }
}

TEST_CASE("loop workloads: the R-MAT matrix is deterministic and power-law") {
  const auto a = wl::make_rmat({.scale = 12, .edge_factor = 8, .seed = 7});
  const auto b = wl::make_rmat({.scale = 12, .edge_factor = 8, .seed = 7});
  CHECK(a.cols == b.cols);
  CHECK(a.vals == b.vals);
  CHECK(a.row_ptr.back() == std::int32_t(a.cols.size()));
  // Row 0 collects the most edges (a + b = 0.76 per level): far above the mean of < 8.
  std::size_t longest = 0, empty = 0;
  for (std::size_t i = 0; i < a.rows; ++i) {
    const auto len = std::size_t(a.row_ptr[i + 1] - a.row_ptr[i]);
    longest = std::max(longest, len);
    empty += len == 0;
  }
  CHECK(longest > 100);
  CHECK(empty > a.rows / 10);
}

TEST_CASE("loop workloads: N-body all pairs equals its reference, exactly when built exact") {
  Controller c;
  // Exact: contraction off and a correctly rounded 1/sqrt on both sides; 16 lanes per body
  // (the default) and 1.
  wl::NBodyLoop exact(c, {.n = 1100});
  check_against(c, exact, exact.reference(), true);
  wl::NBodyLoop one_lane(c, {.n = 1100, .lanes = 1});
  check_against(c, one_lane, one_lane.reference(), true);
  CHECK_THROWS_AS(wl::NBodyLoop(c, {.n = 16, .lanes = 12}), UsageError);
  wl::NBodyLoop fast(c, {.n = 1100, .fast_math = true});
  check_against(c, fast, fast.reference(), false);
}

TEST_CASE("loop workloads: Barnes-Hut equals its reference over two steps, and the tree approximates all pairs") {
  Controller c;
  wl::BarnesHutLoop w(c, {.n = 1500});
  CHECK(w.reads().size() == 4);
  CHECK(w.writes(63, 1000).at(0).box == Box{{63, 0, 0}, {937, 1, 1}});
  for (int step = 0; step < 2; ++step) {
    CAPTURE(step);
    w.before_step();
    CHECK(w.tree_nodes() > w.size());
    CHECK(w.tree_nodes() <= w.tree_capacity());
    const auto ref = w.reference();
    const auto direct = w.direct_sum();
    const auto tree_error =
        wl::compare_floats(ref.data(), direct.data(), ref.size(), wl::BarnesHutLoop::kTreeTolerance, wl::rms(direct));
    CHECK_MESSAGE(tree_error.ok(), "tree against all pairs: " << tree_error.str());
    check_against(c, w, ref, true);
    w.after_step();  // from the mixed run's accelerations, identical to the reference's
  }
}

TEST_CASE("loop workloads: Barnes-Hut built fast-math stays within its tolerance") {
  Controller c;
  wl::BarnesHutLoop w(c, {.n = 1500, .fast_math = true});
  w.before_step();
  check_against(c, w, w.reference(), false);
}

TEST_CASE("loop workloads: chunks outside the loop are refused") {
  Controller c;
  wl::MandelbrotLoop m(c, {.width = 8, .height = 8, .max_iter = 4});
  CHECK_THROWS_AS(m.cpu(4, 4), UsageError);
  CHECK_THROWS_AS(m.device(c, 0, 9), UsageError);
  wl::BarnesHutLoop b(c, {.n = 16});
  CHECK_THROWS_AS(b.cpu(0, 16), UsageError);  // no tree before the first before_step()
  CHECK_THROWS_AS(wl::MandelbrotLoop(c, {.width = 0}), UsageError);
}

TEST_CASE("loop workloads: the check notices an iteration that no chunk computed") {
  Controller c;
  wl::SpmvLoop w(c, {.scale = 11, .edge_factor = 16});
  const auto ref = w.reference();
  run(c, w, {{0, 63, true}, {64, w.size(), true}});  // row 63 left out
  const auto r = w.check(ref);
  CHECK_FALSE(r.ok());
  CHECK(r.out_of_tol == 1);
  CHECK(r.first_bad == 63);
}
