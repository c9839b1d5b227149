// perf/peers: the Sobel and Jacobi workloads on StarPU (Debian's 1.3, its OpenCL driver) against
// hetflow and the hand-written native OpenCL version, in one process, interleaved round by round,
// on the same device (issue "Side by side with StarPU"):
//   native async    perf/native/ (three queues, events, pinned memory: the hand-made best)
//   hetflow async   tools/workloads/pipelines.* with the async policy
//   StarPU <sched>  perf/peers/starpu_workloads.*, once per scheduler; a fresh StarPU per run
//                   (a process holds one StarPU at a time, and each needs its policy at start)
//   bench_peers_workloads sobel|jacobi SIZE STEPS [REPEATS=5] [SCHEDULERS=eager,prio,...]
//     sobel: SIZE = 720p | 1080p | 4k | WxH, STEPS = frames; jacobi: SIZE = N, STEPS = iterations
//     (a snapshot to the host every 10)
// HETFLOW_DEVICE picks the device of all three. STARPU_SCHED, when set, is the only scheduler
// tried (StarPU would use it whatever it is asked for). Round 0 is a warm-up, left out of the
// medians: the dm* schedulers calibrate their performance models there (kept in STARPU_HOME).
// Every output and checksum must be bit-identical to the native one; the exit status is 1 if not.
#include <hetflow/hetflow.hpp>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_sizes.hpp"
#include "bench_args.hpp"
#include "bench_timing.hpp"
#include "native/native_workloads.hpp"
#include "peers/starpu_workloads.hpp"
#include "workloads/cpu_reference.hpp"
#include "workloads/pipelines.hpp"

using namespace hetflow;

namespace {

using bench::median;

bool same(const workloads::RunResult& r, const native::Result& ref) {
  return r.output.size() == ref.output.size() &&
         workloads::count_bit_differences(r.output.data(), ref.output.data(), ref.output.size()) == 0 &&
         r.checksum == ref.checksum;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || (std::string(argv[1]) != "sobel" && std::string(argv[1]) != "jacobi")) {
    std::fprintf(stderr, "usage: %s sobel|jacobi SIZE STEPS [REPEATS=5] [SCHEDULERS=%s]\n", argv[0], "eager,prio,...");
    return 2;
  }
  const std::string workload = argv[1];
  const bool sobel = workload == "sobel";
  const int copy_every = 10;
  try {
    const auto [w, h] = bench::parse_size(argv[2]);
    const int steps = std::atoi(argv[3]);
    const int repeats = argc > 4 ? std::atoi(argv[4]) : 5;
    std::vector<std::string> schedulers = argc > 5 ? bench::split_list(argv[5]) : peers::starpu_schedulers();
    if (const char* env = std::getenv("STARPU_SCHED"); env && *env) schedulers = {env};
    if (w <= 0 || h <= 0 || steps <= 0 || repeats <= 0 || schedulers.empty())
      throw UsageError("SIZE, STEPS and REPEATS must be positive and SCHEDULERS not empty");

    const auto device = select_device();
    const std::string kernels = native::kernel_dir(HETFLOW_SOURCE_KERNEL_DIR_FOR_BENCH);
    auto run_native = [&] {
      if (sobel) return native::run_sobel(device.device.device, {w, h, steps, kernels}, native::Mode::async);
      return native::run_jacobi(device.device.device, {w, steps, copy_every, kernels}, native::Mode::async);
    };
    auto run_hetflow = [&] {
      ControllerOptions o;
      o.policy = Policy::async;
      o.kernel_queues = 1;
      o.record = false;
      Controller c(o);
      if (sobel) return workloads::sobel(c, {w, h, steps, {}, {}});
      return workloads::jacobi(c, w, steps, copy_every);
    };
    std::string starpu_description;
    auto run_starpu = [&](const std::string& scheduler) {
      peers::Starpu sp(device.device, scheduler);
      starpu_description = sp.description();
      if (sobel) return peers::sobel(sp, {w, h, steps, 2, kernels});
      return peers::jacobi(sp, w, steps, copy_every, kernels);
    };

    const std::size_t rows = 2 + schedulers.size();
    std::vector<std::vector<double>> times(rows);
    std::vector<bool> identical(rows, true);
    for (int round = 0; round <= repeats; ++round) {
      const auto ref = run_native();
      const auto hf = run_hetflow();
      std::vector<double> t = {ref.seconds, hf.seconds};
      identical[1] = identical[1] && same(hf, ref);
      for (std::size_t s = 0; s < schedulers.size(); ++s) {
        const auto sp = run_starpu(schedulers[s]);
        t.push_back(sp.seconds);
        identical[2 + s] = identical[2 + s] && same(sp, ref);
      }
      std::fprintf(stderr, "  round %d%s:", round, round == 0 ? " (warm-up)" : "");
      for (double x : t) std::fprintf(stderr, " %.4f", x);
      std::fprintf(stderr, "\n");
      if (round == 0) continue;
      for (std::size_t i = 0; i < rows; ++i) times[i].push_back(t[i]);
    }

    std::printf("%s %s x %d%s on %s (%s), median of %d after a warm-up round\n", workload.c_str(), argv[2], steps,
                sobel ? " frames, 2 slots" : " iterations, snapshot every 10", device.device.name.c_str(),
                device.device.platform_name.c_str(), repeats);
    std::printf("%s; its scheduler per row\n", starpu_description.c_str());
    std::printf("%-16s %10s %10s %10s %11s %6s\n", "runtime", "median s", "ms/step", "/native", "/hetflow", "ident");
    const double native_s = median(times[0]), hetflow_s = median(times[1]);
    bool all_identical = true;
    for (std::size_t i = 0; i < rows; ++i) {
      const std::string name = i == 0 ? "native async" : i == 1 ? "hetflow async" : "StarPU " + schedulers[i - 2];
      const double s = median(times[i]);
      std::printf("%-16s %10.4f %10.3f %10.2f %11.2f %6s\n", name.c_str(), s, 1e3 * s / steps, s / native_s,
                  s / hetflow_s,
                  i == 0         ? "ref"
                  : identical[i] ? "yes"
                                 : "NO");
      all_identical = all_identical && identical[i];
    }
    std::printf(
        "(/native, /hetflow: the row's median over theirs, above 1 slower; ident: output and checksum "
        "bit-identical to native's in every round)\n");
    return all_identical ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_peers_workloads: %s\n", e.what());
    return 1;
  }
}
