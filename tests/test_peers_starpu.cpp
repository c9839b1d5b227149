// The workloads on StarPU (perf/peers/starpu_workloads.*), on the default device (PoCL in CI): each
// equals its CPU reference and is bit-identical, output and checksum, to hetflow's version (the
// Barnes-Hut loop: within its tolerance, from the CPU and the OpenCL implementation alike), under
// a scheduler that takes tasks in order (eager) and one that models and prefetches (dmda).
// Built only where StarPU is installed.
#include <doctest/doctest.h>
#include <hetflow/hetflow.hpp>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "peers/starpu_workloads.hpp"
#include "workloads/barnes_hut_loop.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/frames.hpp"
#include "workloads/pipelines.hpp"

using namespace hetflow;
namespace wl = hetflow::workloads;

namespace {

const std::string kernels = std::string(HETFLOW_TEST_SOURCE_DIR) + "/kernels_cl";
const char* const schedulers[] = {"eager", "dmda"};

// StarPU keeps its bus and performance-model samples under STARPU_HOME (default: $HOME): the
// tests keep theirs in the build tree.
const DeviceInfo& device() {
  static const DeviceInfo d = [] {
    setenv("STARPU_HOME", HETFLOW_TEST_BINARY_DIR "/starpu-home", 0);
    unsetenv("STARPU_SCHED");  // it would override the schedulers the cases ask for
    return select_device().device;
  }();
  return d;
}

bool identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && wl::count_bit_differences(a.data(), b.data(), a.size()) == 0;
}

wl::RunResult hetflow_sobel(int w, int h, int frames) {
  Controller c;
  return wl::sobel(c, {w, h, frames, {}, {}});
}

}  // namespace

TEST_CASE("StarPU workloads: Sobel equals the CPU reference and hetflow's version, whatever the slot count") {
  const int w = 67, h = 45, frames = 5;
  std::vector<float> last(std::size_t(w) * h), ref(last.size());
  wl::generate_frame(last.data(), w, h, frames - 1);
  wl::sobel_reference(last.data(), ref.data(), w, h);
  const auto hf = hetflow_sobel(w, h, frames);
  REQUIRE(wl::max_rel_error(hf.output, ref) <= 1e-5);
  for (const char* scheduler : schedulers) {
    peers::Starpu sp(device(), scheduler);
    CHECK(sp.scheduler() == scheduler);
    for (int slots : {2, 1, 3}) {
      CAPTURE(scheduler);
      CAPTURE(slots);
      const auto r = peers::sobel(sp, {w, h, frames, slots, kernels});
      CHECK(r.frames == frames);
      CHECK(wl::max_rel_error(r.output, ref) <= 1e-5);
      CHECK(identical(r.output, hf.output));
      CHECK(r.checksum == hf.checksum);
    }
  }
}

TEST_CASE("StarPU workloads: Jacobi equals the CPU reference and hetflow's version") {
  const int n = 66;
  // As hetflow's test: 25 ends between snapshots (one more fetch); the intervals rotate 3, 2 and 4
  // grids.
  const std::pair<int, int> runs[] = {{30, 10}, {25, 10}, {7, 1}, {13, 6}};
  for (const char* scheduler : schedulers) {
    peers::Starpu sp(device(), scheduler);
    for (const auto& [iterations, copy_every] : runs) {
      CAPTURE(scheduler);
      CAPTURE(iterations);
      CAPTURE(copy_every);
      std::vector<float> ref;
      wl::jacobi_initial_grid(ref, n);
      wl::jacobi_reference(ref, n, iterations);
      Controller c;
      const auto hf = wl::jacobi(c, n, iterations, copy_every);
      const auto r = peers::jacobi(sp, n, iterations, copy_every, kernels);
      CHECK(wl::max_rel_error(r.output, ref) <= 1e-6);
      CHECK(identical(r.output, hf.output));
      CHECK(r.checksum == hf.checksum);
      CHECK(r.checksum != 0.0);
    }
  }
}

TEST_CASE(
    "StarPU workloads: the Barnes-Hut loop in chunks equals the sequential walk from each implementation and both") {
  Controller c;
  wl::BarnesHutLoop::Params p;
  p.n = 2000;
  wl::BarnesHutLoop bh(c, p);
  bh.before_step();
  const auto ref = bh.reference();
  // 2000 = 7 x 256 + 208: a shorter last chunk, whose launch is rounded up past its end.
  const std::size_t chunk = 256, chunks = (p.n + chunk - 1) / chunk;
  REQUIRE(p.n % chunk != 0);
  const int steps = 2;
  const std::size_t tasks = chunks * (steps + 1);  // the untimed call too
  for (const char* scheduler : schedulers) {
    peers::Starpu sp(device(), scheduler);
    for (auto sides : {peers::LoopSides::cpu, peers::LoopSides::device, peers::LoopSides::both}) {
      CAPTURE(scheduler);
      CAPTURE(int(sides));
      const auto r = peers::barnes_hut(sp, bh, {chunk, steps, sides, kernels});
      REQUIRE(r.output.size() == p.n);
      const auto check = bh.check(r.output.data(), ref);
      CAPTURE(check.str());
      CHECK(check.ok());
      CHECK(r.seconds.size() == std::size_t(steps));
      CHECK(r.cpu_tasks + r.device_tasks == tasks);
      if (sides == peers::LoopSides::cpu) {
        CHECK(r.device_tasks == 0);
        CHECK(r.device_iterations == 0);
      }
      if (sides == peers::LoopSides::device) {
        CHECK(r.cpu_tasks == 0);
        CHECK(r.device_iterations == p.n * steps);
      }
    }
  }
  peers::Starpu sp(device(), "eager");
  // A chunk past n is one task of n bodies.
  const auto whole = peers::barnes_hut(sp, bh, {2 * p.n, 1, peers::LoopSides::device, kernels});
  REQUIRE(whole.output.size() == p.n);
  CHECK(bh.check(whole.output.data(), ref).ok());
  CHECK(whole.device_tasks == 2);
  CHECK(whole.device_iterations == p.n);
  CHECK_THROWS_AS(peers::barnes_hut(sp, bh, {chunk, 0, peers::LoopSides::both, kernels}), UsageError);
  wl::BarnesHutLoop no_tree(c, p);
  CHECK_THROWS_AS(peers::barnes_hut(sp, no_tree, {chunk, 1, peers::LoopSides::both, kernels}), UsageError);
}

TEST_CASE("StarPU workloads: bad parameters, an unknown scheduler and a missing kernel file are reported") {
  CHECK_THROWS_AS(peers::Starpu(device(), "no-such-scheduler"), UsageError);
  peers::Starpu sp(device(), "eager");
  CHECK_THROWS_AS(peers::sobel(sp, {0, 45, 5, 2, kernels}), UsageError);
  CHECK_THROWS_AS(peers::sobel(sp, {67, 45, 5, 0, kernels}), UsageError);
  CHECK_THROWS_AS(peers::jacobi(sp, 66, 10, 0, kernels), UsageError);
  if (const char* env = std::getenv("HETFLOW_KERNEL_PATH"); !env || !*env)
    CHECK_THROWS_AS(peers::jacobi(sp, 66, 10, 10, HETFLOW_TEST_BINARY_DIR "/no-such-dir"), FileNotFoundError);
  // StarPU is still usable after the failures.
  CHECK(peers::jacobi(sp, 66, 10, 10, kernels).output.size() == 66u * 66u);
}
