// The heterogeneous loop over several devices (include/hetflow/parallel_for.hpp): two controllers on
// this machine's PoCL device act as two devices (HETFLOW_TEST_SECOND_DEVICE puts the second on
// another device: perf/run-gpu.sh's `twogpu` part runs these cases over two GPUs). Every iteration exactly once on
// exactly one side, for every scheduler and awkward sizes; each device's results land in the home controller's tiles,
// which its later requests see; the loop workloads equal their references; failures on the second
// device are named and nothing hangs; misuse is refused with what is wrong.
#include <hetflow/dump.hpp>
#include <hetflow/parallel_for.hpp>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "process.hpp"
#include "support.hpp"
#include "workloads/loop_registry.hpp"

using namespace hetflow;

namespace {

// Marks each iteration on the side that ran it: the CPU in `cpu_hits`, a device by adding its mark
// (1 for device 0, 16 for device 1) to the home tile `device_hits`, one kernel for both.
constexpr int kMark[2] = {1, 16};

// The second device's options: the default device again, or HETFLOW_TEST_SECOND_DEVICE's.
ControllerOptions second_options(ControllerOptions o) {
  if (const char* sel = std::getenv("HETFLOW_TEST_SECOND_DEVICE"); sel && *sel) o.device = sel;
  return o;
}

struct TwoDevices {
  Controller home{test::options(Policy::async)};
  Controller second{second_options(test::options(Policy::async))};
  std::vector<Controller*> list() { return {&home, &second}; }
};

struct MarkingLoop {
  MarkingLoop(TwoDevices& devs, std::size_t n)
      : d(devs),
        size(n ? n : 1),
        device_hits(devs.home.tile<int>(size, "device_hits")),
        cpu_hits(std::make_unique<std::atomic<int>[]>(size)),
        mark(devs.home.kernel_from_source("kernel void mark(global int* hits, ulong end, int who) {"
                                          "  size_t i = get_global_id(0); if (i < end) hits[i] += who; }",
                                          "mark")) {
    test::fill(device_hits, 0);
  }
  LoopBody body() {
    LoopBody b;
    b.cpu = [this](Chunk ch) {
      for (std::size_t i = ch.begin; i < ch.end; ++i) cpu_hits[i].fetch_add(1);
    };
    // Written once, against the home controller's kernel and tile, whichever device runs it.
    b.device = [this](Controller& ctl, Chunk ch) {
      const int who = &ctl == &d.second ? kMark[1] : kMark[0];
      ctl.launch(mark, Range(ch.size()).offset(ch.begin), io(device_hits.region(span_of(ch))), cl_ulong(ch.end), who);
    };
    b.reads = {in(device_hits)};
    b.writes = [this](Chunk ch) { return std::vector<Access>{io(device_hits.region(span_of(ch)))}; };
    return b;
  }
  // Every iteration of [0, n) once, on one side; how many each side ran.
  bool each_once(std::size_t n, std::size_t (&ran)[3]) const {
    ran[0] = ran[1] = ran[2] = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const int cpu = cpu_hits[i].load(), dev = device_hits[i];
      if (cpu == 1 && dev == 0)
        ++ran[0];
      else if (cpu == 0 && dev == kMark[0])
        ++ran[1];
      else if (cpu == 0 && dev == kMark[1])
        ++ran[2];
      else
        return false;
    }
    return true;
  }
  TwoDevices& d;
  std::size_t size;
  Tile<int> device_hits;
  std::unique_ptr<std::atomic<int>[]> cpu_hits;
  Kernel mark;
};

}  // namespace

TEST_CASE("over two devices every iteration runs exactly once, on one side, for every scheduler and awkward sizes") {
  TwoDevices devs;
  for (const char* scheduler :
       {"logfit", "static:0.4,0.4", "static:0.5", "static:0,1", "static:0", "dynamic:100", "hguided", "oracle"})
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(63), std::size_t(64), std::size_t(65),
                          std::size_t(1000), std::size_t(1000003)})
      for (unsigned slots : {1u, 2u}) {
        CAPTURE(scheduler);
        CAPTURE(n);
        CAPTURE(slots);
        MarkingLoop loop(devs, n);
        const auto report = parallel_for(devs.list(), n, loop.body(),
                                         {.scheduler = scheduler, .cpu_workers = 2, .device_slots = slots});
        std::size_t ran[3];
        REQUIRE(loop.each_once(n, ran));
        REQUIRE(report.sides.size() == 3);
        CHECK(report.sides[0].name == "cpu");
        CHECK(report.sides[1].name == devs.home.device().name);
        CHECK(report.sides[2].name == devs.second.device().name);
        for (int s = 0; s < 3; ++s) CHECK(report.sides[s].iterations == ran[s]);
        CHECK(ran[0] + ran[1] + ran[2] == n);
        if (std::string(scheduler) == "static:0,1") CHECK(ran[2] == n);
      }
}

TEST_CASE(
    "by default each device past the first leaves two more threads to the drivers; asked for, up to all but one") {
  // LoopOptions::cpu_workers: two H100s of a 32-thread host answered ~4 ms late with 30 or 31 CPU
  // workers and mostly within 1 ms with 29 (perf/RESULTS.md). Eight threads here, whatever the machine has.
  tbb::global_control eight(tbb::global_control::max_allowed_parallelism, 8);
  tbb::task_arena arena(8);
  arena.execute([] {
    TwoDevices devs;
    const std::size_t n = 5000;
    struct Case {
      std::vector<Controller*> devices;
      unsigned asked, expected;
    };
    for (const Case& c : {Case{{&devs.home}, 0, 7}, Case{devs.list(), 0, 5}, Case{devs.list(), 7, 7},
                          Case{devs.list(), 9, 7}, Case{devs.list(), 3, 3}}) {
      CAPTURE(c.devices.size());
      CAPTURE(c.asked);
      MarkingLoop loop(devs, n);
      const auto report = parallel_for(c.devices, n, loop.body(), {.scheduler = "dynamic:64", .cpu_workers = c.asked});
      std::size_t ran[3];
      CHECK(loop.each_once(n, ran));
      CHECK(report.cpu_workers == c.expected);
    }
  });
}

TEST_CASE("over two devices CPU chunks' tails go to either device, several at once, every iteration once") {
  // Five CPU workers whose iterations end on the same 20 ms ticks, both devices far faster: once
  // the devices have run their shares the CPU chunks give their tails at one tick, each counted as
  // the device it was priced for (only that device's tokens take it), several in flight on one.
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 6);
  tbb::task_arena arena(6);
  std::optional<TwoDevices> devs;
  arena.execute([&] { devs.emplace(); });
  const Kernel slow_mark = devs->home.kernel_from_source(
      "kernel void slow_mark(global int* hits, ulong end, int who, uint spin) { size_t i = get_global_id(0);"
      " float v = (float)i; for (uint j = 0; j < spin; ++j) v = v * 0.999999f + 1.0f;"
      " if (i < end) hits[i] += v < 0.0f ? 2 * who : who; }",
      "slow_mark");
  for (unsigned slots : {1u, 2u}) {
    CAPTURE(slots);
    constexpr std::size_t n = 2000;  // milliseconds of device chunks on an H200: the CPU workers start first
    MarkingLoop loop(*devs, n);
    LoopBody body = loop.body();
    body.reads.clear();  // a CPU chunk reading the whole tile would wait for the one writing before it
    // Each work-item spins 2^16 steps first (~1.5 ms for 20 iterations on PoCL here): with marks of
    // microseconds the devices took the whole range before a CPU worker started.
    body.device = [&](Controller& ctl, Chunk ch) {
      const int who = &ctl == &devs->second ? kMark[1] : kMark[0];
      ctl.launch(slow_mark, Range(ch.size()).offset(ch.begin), io(loop.device_hits.region(span_of(ch))),
                 cl_ulong(ch.end), who, cl_uint(1u << 16));
    };
    body.cpu = test::on_ticks(body.cpu, std::chrono::milliseconds(20));
    LoopReport report;
    arena.execute([&] {
      report =
          parallel_for(devs->list(), n, body, {.scheduler = "dynamic:20", .cpu_workers = 5, .device_slots = slots});
    });
    std::size_t ran[3];
    REQUIRE(loop.each_once(n, ran));
    for (int side = 0; side < 3; ++side) CHECK(report.sides[std::size_t(side)].iterations == ran[side]);
    // The devices ran more chunks than the 20-iteration ones they took: tails of CPU chunks.
    CHECK(report.sides[1].chunks + report.sides[2].chunks > (ran[1] + ran[2]) / 20);
  }
}

TEST_CASE("static:0.4,0.4 gives each device its share, and a loop kept across calls keeps using both") {
  TwoDevices devs;
  const std::size_t n = 100000;
  MarkingLoop counting(devs, n);
  HeteroLoop loop(devs.list(), counting.body(), {.scheduler = "static:0.4,0.4", .cpu_workers = 2});
  for (int call = 0; call < 3; ++call) {
    CAPTURE(call);
    for (std::size_t i = 0; i < n; ++i) counting.cpu_hits[i] = 0;
    test::fill(counting.device_hits, 0);
    const auto report = loop(n);
    std::size_t ran[3];
    REQUIRE(counting.each_once(n, ran));
    CHECK(ran[1] == 40000);
    CHECK(ran[2] == 40000);
    CHECK(ran[0] == 20000);
    CHECK(report.sides[1].chunks == 1);
    CHECK(report.sides[2].chunks == 1);
    CHECK(report.scheduler.find("0.4") != std::string::npos);
  }
}

TEST_CASE("the loop workloads over the CPU and two devices equal their sequential references") {
  TwoDevices devs;
  for (const char* name : {"mandelbrot", "nbody", "spmv", "barneshut"})
    for (const char* scheduler : {"static:0.3,0.3", "hguided", "logfit", "dynamic:257"}) {
      CAPTURE(name);
      CAPTURE(scheduler);
      auto w = workloads::make_loop_workload(devs.home, name, 0);
      HeteroLoop loop(devs.list(), w->body(), {.scheduler = scheduler, .cpu_workers = 2});
      for (int call = 0; call < 2; ++call) {
        w->before_call();
        w->clear_output();
        const auto report = loop(w->size());
        const auto check = w->check();
        CHECK_MESSAGE(check.ok(), check.str());
        CHECK(report.sides[0].iterations + report.sides[1].iterations + report.sides[2].iterations == w->size());
        if (std::string(scheduler).rfind("static", 0) == 0) CHECK(report.sides[2].iterations > 0);
      }
    }
}

TEST_CASE("the home controller's requests before the loop come first, and its later ones see every device's results") {
  TwoDevices devs;
  Controller& home = devs.home;
  const std::size_t n = 4096;
  auto x = home.tile<float>(n, "x");
  auto y = home.tile<float>(n, "y");
  test::fill(x, 0.0f);
  test::fill(y, -1.0f);
  auto square = home.kernel_from_source(
      "kernel void square(global const float* x, global float* y, ulong end) {"
      "  size_t i = get_global_id(0); if (i < end) y[i] = x[i] * x[i]; }",
      "square");
  auto scale = home.kernel("hetflow_test.cl", "scale_in_place");
  // A slow host task writes the input before the loop: the loop must read what it wrote.
  home.host_task(
      "slow input",
      [x]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 100);
      },
      out(x));
  LoopBody body;
  body.cpu = [&](Chunk ch) {
    for (auto i = ch.begin; i < ch.end; ++i) y[i] = x[i] * x[i];
  };
  body.device = [&](Controller& ctl, Chunk ch) {
    ctl.launch(square, Range(ch.size()).offset(ch.begin), in(x), out(y.region(span_of(ch))), cl_ulong(ch.end));
  };
  body.reads = {in(x)};
  body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
  const auto report = parallel_for(devs.list(), n, body, {.scheduler = "static:0.25,0.5", .cpu_workers = 1});
  REQUIRE(report.sides[2].iterations == 2048);
  REQUIRE(report.sides[1].iterations == 1024);
  // Later requests on the home controller: a kernel over what the device image now gets, then a
  // host task reading the host image.
  home.move_to(y);
  home.launch(scale, Range(n), io(y), int(n), 2.0f);
  home.move_from(y);
  std::atomic<std::size_t> wrong{n};
  home.host_task(
      "check",
      [&] {
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) bad += y[i] != 2.0f * float(i % 100) * float(i % 100) + 1.0f;
        wrong = bad;
      },
      in(y));
  home.wait_all();
  CHECK(wrong.load() == 0);
}

TEST_CASE(
    "a chunk that fails on the second device is named with its side and range; nothing hangs; the loop runs again") {
  TwoDevices devs;
  MarkingLoop counting(devs, 50000);
  LoopBody body = counting.body();
  std::atomic<bool> fail{true};
  auto device = body.device;
  body.device = [&, device](Controller& ctl, Chunk ch) {
    if (fail.load() && &ctl == &devs.second) throw std::runtime_error("the second device refuses");
    device(ctl, ch);
  };
  // A static share: the second device is sure to get a chunk (with dynamic chunks the CPU may run
  // them all before its token asks).
  HeteroLoop loop(devs.list(), body, {.scheduler = "static:0.3,0.3", .cpu_workers = 2});
  try {
    loop(50000);
    FAIL("no failure reported");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("device 1 (" + devs.second.device().name + ") chunk [") != std::string::npos);
    CHECK(what.find("the second device refuses") != std::string::npos);
  }
  fail = false;
  for (std::size_t i = 0; i < counting.size; ++i) counting.cpu_hits[i] = 0;
  test::fill(counting.device_hits, 0);
  const auto report = loop(50000);
  std::size_t ran[3];
  CHECK(counting.each_once(50000, ran));
  CHECK(ran[2] == 15000);
  CHECK(report.sides[2].iterations == 15000);
  devs.home.wait_all();
  devs.second.wait_all();
}

// y = x * x over two controllers, the second recording, so its H2D records count what went to it;
// x given as a read or as a constant.
struct SquareLoop {
  enum class Input { read, constant };
  explicit SquareLoop(Input input)
      : x(home.tile<float>(n, "x")),
        y(home.tile<float>(n, "y")),
        square(home.kernel_from_source("kernel void square(global const float* x, global float* y, ulong end) {"
                                       "  size_t i = get_global_id(0); if (i < end) y[i] = x[i] * x[i]; }",
                                       "square")) {
    body.device = [this](Controller& ctl, Chunk ch) {
      ctl.launch(square, Range(ch.size()).offset(ch.begin), in(x), out(y.region(span_of(ch))), cl_ulong(ch.end));
    };
    if (input == Input::read)
      body.reads = {in(x)};
    else
      body.constants = {in(x)};
    body.writes = [this](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
  }
  static ControllerOptions recording() {
    ControllerOptions o = test::options(Policy::async);
    o.record = true;
    return o;
  }
  std::size_t moves_to_second() const {
    std::size_t h2d = 0;
    for (const auto& r : second.records()) h2d += r.kind == "H2D";
    return h2d;
  }
  void set_x(float base) {
    for (std::size_t i = 0; i < n; ++i) x[i] = float(i % 97) + base;
  }
  std::size_t wrong() const {  // y against x, after a call
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += y[i] != x[i] * x[i];
    return bad;
  }
  static constexpr std::size_t n = 4096;
  Controller home{test::options(Policy::async)}, second{second_options(recording())};
  Tile<float> x, y;
  Kernel square;
  LoopBody body;
};

// LoopBody::constants on a further device: moved with its first chunk of the loop, then kept; a call
// that gives it nothing moves nothing; after constants_changed() moved again, and used.
TEST_CASE("a loop's constants go to a further device with its first chunk of the loop, once") {
  SquareLoop s(SquareLoop::Input::constant);
  auto call = [&](HeteroLoop& loop) {
    test::fill(s.y, -1.0f);
    const auto report = loop(s.n);
    CHECK(s.wrong() == 0);
    return report;
  };
  s.set_x(0.5f);
  HeteroLoop home_only({&s.home, &s.second}, s.body, {.scheduler = "static:1,0"});
  call(home_only);
  CHECK(s.moves_to_second() == 0);  // given nothing: nothing moved
  HeteroLoop split({&s.home, &s.second}, s.body, {.scheduler = "static:0.5,0.5"});
  for (int i = 0; i < 3; ++i) CHECK(call(split).sides[2].iterations > 0);
  CHECK(s.moves_to_second() == 1);
  s.set_x(1.75f);
  split.constants_changed();
  call(split);
  call(split);
  CHECK(s.moves_to_second() == 2);
}

TEST_CASE("a read nothing writes goes to a further device with its first chunk, and not at all without one") {
  SquareLoop s(SquareLoop::Input::read);
  int call = 0;
  for (const char* scheduler : {"static:1,0", "static:0.5,0.5", "static:0,1"}) {
    CAPTURE(scheduler);
    const std::size_t before = s.moves_to_second();
    // New input each call: a device computing from an earlier call's copy gets it wrong.
    s.set_x(0.25f * float(++call));
    test::fill(s.y, -1.0f);
    const auto report = parallel_for({&s.home, &s.second}, s.n, s.body, {.scheduler = scheduler, .device_slots = 2});
    CHECK(s.moves_to_second() - before == (report.sides[2].iterations > 0 ? 1u : 0u));
    CHECK(s.wrong() == 0);
  }
}

TEST_CASE("misuse of a loop over several devices is refused with what is wrong") {
  TwoDevices devs;
  MarkingLoop counting(devs, 1000);
  CHECK_THROWS_WITH_AS(HeteroLoop({&devs.home, &devs.second, &devs.home}, counting.body()),
                       doctest::Contains("listed twice (0 and 2)"), UsageError);
  CHECK_THROWS_WITH_AS(HeteroLoop({&devs.home, nullptr}, counting.body()),
                       doctest::Contains("device 1 of the list is a null controller"), UsageError);
  CHECK_THROWS_WITH_AS(HeteroLoop(std::vector<Controller*>{}, counting.body()),
                       doctest::Contains("list of devices is empty"), UsageError);
  CHECK_THROWS_WITH_AS(HeteroLoop(devs.list(), counting.body(), {.scheduler = "static:0.2,0.2,0.2"}),
                       doctest::Contains("3 shares for a loop over 2 device(s)"), UsageError);
  CHECK_THROWS_WITH_AS(HeteroLoop(devs.list(), counting.body(), {.scheduler = "static:0.7,0.7"}),
                       doctest::Contains("more than 1"), UsageError);
  Controller sync(test::options(Policy::sync));
  CHECK_THROWS_WITH_AS(HeteroLoop({&devs.home, &sync}, counting.body()), doctest::Contains("sync policy"), UsageError);

  // Chunks writing one region (every chunk the whole tile) over two devices: a device's transfers
  // back are not ordered with another's writes, and a histogram kept one device's counts only (a
  // user's trial, 2026-11-29). Refused at the call, before anything runs.
  {
    LoopBody whole = counting.body();
    whole.writes = [&](Chunk) { return std::vector<Access>{io(counting.device_hits)}; };
    CHECK_THROWS_WITH_AS(parallel_for(devs.list(), 1000, whole),
                         doctest::Contains("chunks must write disjoint regions"), UsageError);
    CHECK_THROWS_WITH_AS(parallel_for(devs.list(), 1000, whole), doctest::Contains("tile 'device_hits'"), UsageError);
    // One device takes them, one at a time (test_parallel_for.cpp).
    CHECK_NOTHROW(parallel_for(devs.home, 1000, whole));
  }

  // A launch on the second device over a home tile the loop never moved there.
  auto elsewhere = devs.home.tile<int>(1000, "elsewhere");
  LoopBody body = counting.body();
  body.cpu = nullptr;
  body.device = [&](Controller& ctl, Chunk ch) {
    ctl.launch(counting.mark, Range(ch.size()).offset(ch.begin), io(elsewhere), cl_ulong(ch.end), 1);
  };
  try {
    parallel_for(devs.list(), 1000, body, {.scheduler = "static:0,1"});
    FAIL("the launch was not refused");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(
              "tile 'elsewhere' is in neither LoopBody::reads, LoopBody::constants nor the chunk's writes") !=
          std::string::npos);
  }
  devs.second.wait_all();
}

// A body that captured the home controller (or any other) instead of using the one it is given ran
// the second device's chunks on the home device, and the transfers back brought the second device's
// untouched images over their results: the call returned, the results silently lost.
TEST_CASE("a device body that submits nothing on the controller it is given is refused, naming that controller") {
  TwoDevices devs;
  MarkingLoop counting(devs, 1000);
  LoopBody body = counting.body();
  body.cpu = nullptr;
  auto device = body.device;
  body.device = [&, device](Controller&, Chunk ch) { device(devs.home, ch); };
  try {
    parallel_for(devs.list(), 1000, body, {.scheduler = "static:0.5,0.5"});
    FAIL("the launch on the home controller was not refused");
  } catch (const RequestFailed& e) {
    const FailedRequest& chunk = e.failures().at(0);
    CHECK(chunk.name.find("device 1 (") != std::string::npos);
    CHECK(chunk.cause.find("on the loop's first controller from a chunk of device 1 (") != std::string::npos);
    CHECK(chunk.cause.find("launches on the Controller& it is given") != std::string::npos);
    REQUIRE(chunk.exception);
    CHECK_THROWS_AS(std::rethrow_exception(chunk.exception), UsageError);
  }
  body.device = [](Controller&, Chunk) {};  // nothing at all
  try {
    parallel_for(devs.list(), 1000, body, {.scheduler = "static:0,1"});
    FAIL("a chunk that launched nothing was not refused");
  } catch (const RequestFailed& e) {
    const FailedRequest& chunk = e.failures().at(0);
    CHECK(chunk.cause.find("submitted no launch on the Controller& it was given for chunk [0, 1000)") !=
          std::string::npos);
    CHECK_THROWS_AS(std::rethrow_exception(chunk.exception), UsageError);
  }
  devs.home.wait_all();
  devs.second.wait_all();
}

TEST_CASE("hetflow run takes --devices for the loop workloads, verified, and refuses it elsewhere") {
  const std::string cli = test::program_beside_or("hetflow", HETFLOW_CLI_PATH);
  // --trace writes each device's timeline: the home one's, and the further device's beside it.
  const std::string trace =
      (std::filesystem::temp_directory_path() / ("hetflow_two_devices_" + std::to_string(::getpid()) + ".json"))
          .string();
  const std::string trace1 = hetflow::dump_companion(trace, ".dev1.json");
  const auto r = test::run_command(cli + " run mandelbrot --size 96 --devices cpu,cpu --scheduler static:0.4,0.4 " +
                                   "--calls 2 --cpu-workers 1 --verify --trace " + trace);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("dev1 iters") != std::string::npos);
  CHECK(r.output.find("0 beyond tolerance") != std::string::npos);
  CHECK(r.output.find("timeline: " + trace1) != std::string::npos);
  const auto report = test::run_command(cli + " report " + trace1);
  INFO(report.output);
  CHECK(report.status == 0);
  CHECK(report.output.find("kernel0") != std::string::npos);  // the further device ran its chunks' kernels
  std::filesystem::remove(trace);
  std::filesystem::remove(trace1);
  const auto sobel = test::run_command(cli + " run sobel --devices cpu,cpu");
  INFO(sobel.output);
  CHECK(sobel.status != 0);
  CHECK(sobel.output.find("--devices is for the loop workloads") != std::string::npos);
}
