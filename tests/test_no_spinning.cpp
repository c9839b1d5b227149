// "No thread blocks or spins while the device works" (include/hetflow/flow.hpp, parallel_for.hpp,
// Controller::on_ready): seed 002's opencl_node kept a thread busy polling the device, which starved
// the CPU side (its Fig. 47). Checked on the default device with a kernel that keeps exactly one of
// PoCL's threads busy (copy_loop runs in one work-group): while it runs, the whole process may use
// about one core. A thread spinning or polling hard beside it would take another core (this machine
// has at least two), which the process's CPU time shows. The check cannot fail without spinning —
// one busy kernel thread and sleeping threads stay under the bound whatever the load — but a busy
// machine can hide a spinner (then the spinner shares the kernel's cores and the wall time grows).
#include <hetflow/flow.hpp>
#include <hetflow/parallel_for.hpp>

#include <sys/resource.h>

#include <chrono>
#include <thread>

#include "support.hpp"

using namespace hetflow;
namespace hf = hetflow::flow;

namespace {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// CPU time and wall time of `work`.
template <class F>
std::pair<double, double> cpu_and_wall(F&& work) {
  const double cpu0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  work();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {process_cpu_seconds() - cpu0, wall};
}

constexpr int kLen = 1 << 16;
constexpr int kGroup = 64;  // one work-group: one of PoCL's threads

// A repeat count for copy_loop that keeps one work-group busy for about `seconds` on this device.
int repeats_for(Controller& c, const Kernel& k, Tile<float>& a, Tile<float>& b, double seconds) {
  // Once first: PoCL builds a kernel for its work-group size at the first launch, which with a cold
  // cache (a fresh machine) made the calibration's first launch long and the kernel ~4x too short.
  c.launch(k, Range(kGroup).local(kGroup), in(a), out(b), kLen, 1);
  c.wait_all();
  int repeat = 64;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    c.launch(k, Range(kGroup).local(kGroup), in(a), out(b), kLen, repeat);
    c.wait_all();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (took >= 0.05 || repeat >= (1 << 24)) return std::max(64, int(double(repeat) * seconds / std::max(took, 1e-3)));
    repeat *= 4;
  }
}

// A controller, copy_loop, its tiles and a repeat count that keeps one work-group busy ~1 s.
struct LongKernel {
  Controller c{test::options(Policy::async, 1)};
  Kernel k = c.kernel("hetflow_test.cl", "copy_loop");
  Tile<float> a = c.tile<float>(kLen, "a"), b = c.tile<float>(kLen, "b");
  int repeat = prepare();
  int prepare() {
    std::fill(a.data(), a.data() + kLen, 1.0f);
    c.move_to(a);
    return repeats_for(c, k, a, b, 1.0);
  }
};

void check_about_one_core(double cpu, double wall, const char* what) {
  INFO(std::string(what) << ": process CPU " << cpu << " s over " << wall << " s of wall time");
  CHECK(wall > 0.3);               // the kernel dominated the window
  CHECK(cpu < 1.5 * wall + 0.05);  // one busy kernel thread, the rest asleep
}

}  // namespace

TEST_CASE("a flow graph waiting on a long kernel keeps no thread busy beside it") {
  LongKernel lk;
  auto& [c, k, a, b, repeat] = lk;

  struct Msg : hf::Message {
    Tile<float> a, b;
  };
  tbb::flow::graph g;
  bool body_ran = false;
  hf::kernel_node<Msg> slow(
      g, c, k, [&](const Msg& m) { return hf::launch(Range(kGroup).local(kGroup), in(m.a), out(m.b), kLen, repeat); },
      {.emit = hf::Emit::when_complete});
  hf::host_node<Msg> after(
      g, c, [](const Msg& m) { return hf::touch(in(m.b)); }, [&](Msg& m) { body_ran = m.b[0] == 1.0f; });
  tbb::flow::make_edge(slow, after);
  Msg m;
  m.a = a;
  m.b = b;
  const auto [cpu, wall] = cpu_and_wall([&] {
    slow.try_put(m);
    g.wait_for_all();
  });
  CHECK(body_ran);
  check_about_one_core(cpu, wall, "flow graph");
}

TEST_CASE("an on_ready hook on a long kernel keeps no thread busy while the program sleeps") {
  LongKernel lk;
  auto& [c, k, a, b, repeat] = lk;
  std::atomic<bool> fired{false};
  const auto [cpu, wall] = cpu_and_wall([&] {
    c.launch(k, Range(kGroup).local(kGroup), in(a), out(b), kLen, repeat);
    c.on_ready([&](const Outcome& o) { fired = o.ok(); }, device_image(in(b)));
    while (!fired) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the program does something else
  });
  CHECK(fired);
  check_about_one_core(cpu, wall, "on_ready");
  c.wait_all();
}

TEST_CASE("a loop whose chunk is on the device keeps no thread busy while it runs") {
  LongKernel lk;
  auto& [c, k, a, b, repeat] = lk;
  LoopBody body;
  body.cpu = [&](Chunk ch) {
    for (auto i = ch.begin; i < ch.end; ++i) b[i] = a[i];
  };
  // The whole loop is one work-group's worth: its one chunk keeps one PoCL thread busy.
  body.device = [&](Controller& ctl, Chunk ch) {
    ctl.launch(k, Range(kGroup).local(kGroup), in(a), out(b.region(span_of(Chunk{0, kLen}))), kLen, repeat);
    (void)ch;
  };
  body.reads = {in(a)};
  body.writes = [&](Chunk) { return std::vector<Access>{out(b.region(span_of(Chunk{0, kLen})))}; };
  HeteroLoop loop(c, body, {.scheduler = "static:1"});
  LoopReport report;
  const auto [cpu, wall] = cpu_and_wall([&] { report = loop(kGroup); });
  REQUIRE(report.sides.size() == 2);
  CHECK(report.sides[1].iterations == std::size_t(kGroup));  // all of it on the device
  CHECK(b[kLen - 1] == 1.0f);
  check_about_one_core(cpu, wall, "parallel_for");
}
