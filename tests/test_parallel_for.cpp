// The heterogeneous loop (include/hetflow/parallel_for.hpp, docs/parallel-for.md) on the real engine
// and the default device: every iteration exactly once on exactly one side, for every scheduler and
// awkward sizes; results equal to the CPU reference; failures reported, nothing hangs.
#include <hetflow/dump.hpp>
#include <hetflow/hetflow.hpp>  // the loop and the loop node too, as the README's examples assume

#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "analysis/dump_reader.hpp"
#include "process.hpp"
#include "engine.hpp"
#include "hetero_loop.hpp"
#include "support.hpp"
#include "workloads/mandelbrot_loop.hpp"

using namespace hetflow;

namespace {

// Counts each iteration on the side that ran it: the CPU in `cpu_hits`, the device in the tile
// `device_hits` (which starts at 0 and comes back per device chunk).
struct CountingLoop {
  CountingLoop(Controller& ctl, std::size_t n)
      : c(ctl),
        size(n ? n : 1),
        device_hits(ctl.tile<int>(size, "device_hits")),
        cpu_hits(std::make_unique<std::atomic<int>[]>(size)),
        mark(ctl.kernel_from_source(
            "kernel void mark(global int* hits, ulong end) { size_t i = get_global_id(0); if (i < end) hits[i] += 1; }",
            "mark")) {
    test::fill(device_hits, 0);
  }
  LoopBody body() {
    LoopBody b;
    b.cpu = [this](Chunk ch) {
      for (std::size_t i = ch.begin; i < ch.end; ++i) cpu_hits[i].fetch_add(1);
    };
    b.device = [this](Controller& ctl, Chunk ch) {
      ctl.launch(mark, Range(ch.size()).offset(ch.begin), io(device_hits.region(span_of(ch))), cl_ulong(ch.end));
    };
    b.reads = {in(device_hits)};
    b.writes = [this](Chunk ch) { return std::vector<Access>{io(device_hits.region(span_of(ch)))}; };
    return b;
  }
  // body(), its CPU side taking `per_iteration` (asleep) for each iteration: a CPU far slower than
  // the device.
  LoopBody body_with_slow_cpu(std::chrono::milliseconds per_iteration) {
    LoopBody b = body();
    b.cpu = [counted = b.cpu, per_iteration](Chunk ch) {
      std::this_thread::sleep_for(per_iteration * ch.size());
      counted(ch);
    };
    return b;
  }
  // Both sides' counts back to 0, for the next call.
  void reset() {
    for (std::size_t i = 0; i < size; ++i) cpu_hits[i] = 0;
    test::fill(device_hits, 0);
  }
  // Every iteration of [0, n) once, on one side.
  bool each_once(std::size_t n, std::size_t& on_cpu, std::size_t& on_device) const {
    on_cpu = on_device = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const int cpu = cpu_hits[i].load(), dev = device_hits[i];
      if (cpu + dev != 1) return false;
      on_cpu += std::size_t(cpu);
      on_device += std::size_t(dev);
    }
    return true;
  }
  Controller& c;
  std::size_t size;
  Tile<int> device_hits;
  std::unique_ptr<std::atomic<int>[]> cpu_hits;
  Kernel mark;
};

// CountingLoop's marks on the device, each work-item spinning `spin` steps first: with 2^20, a
// device chunk of a millisecond or two on any device (~25 ms for 20 iterations on PoCL here).
struct SlowMark {
  explicit SlowMark(Controller& c, cl_uint spin_steps = 1u << 20)
      : spin(spin_steps),
        kernel(c.kernel_from_source(
            "kernel void slow_mark(global int* hits, ulong end, uint spin) { size_t i = get_global_id(0);"
            " float v = (float)i; for (uint j = 0; j < spin; ++j) v = v * 0.999999f + 1.0f;"
            " if (i < end) hits[i] += v < 0.0f ? 2 : 1; }",
            "slow_mark")) {}
  void operator()(Controller& ctl, CountingLoop& counting, Chunk ch) const {
    ctl.launch(kernel, Range(ch.size()).offset(ch.begin), io(counting.device_hits.region(span_of(ch))),
               cl_ulong(ch.end), spin);
  }
  cl_uint spin;
  Kernel kernel;
};

// The TBB threads a loop may use: its CPU workers and the one left to the devices.
unsigned tbb_threads() {
  return unsigned(
      std::min<std::size_t>(std::size_t(tbb::this_task_arena::max_concurrency()),
                            tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism)));
}

}  // namespace

TEST_CASE("every iteration runs exactly once, on one side, for every scheduler and awkward sizes") {
  Controller c(test::options(Policy::async));
  for (const char* scheduler : {"logfit", "static:0.5", "static:0", "static:1", "dynamic:100", "hguided", "oracle"})
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(63), std::size_t(64), std::size_t(65),
                          std::size_t(1000), std::size_t(100003)})
      for (unsigned workers : {1u, 3u}) {
        CAPTURE(scheduler);
        CAPTURE(n);
        CAPTURE(workers);
        CountingLoop loop(c, n);
        // One device chunk in flight with one worker, three with three.
        const auto report =
            parallel_for(c, n, loop.body(), {.scheduler = scheduler, .cpu_workers = workers, .device_slots = workers});
        std::size_t on_cpu = 0, on_device = 0;
        CHECK(loop.each_once(n, on_cpu, on_device));
        CHECK(report.sides.size() == 2);
        CHECK(report.sides[0].iterations == on_cpu);
        CHECK(report.sides[1].iterations == on_device);
        CHECK(on_cpu + on_device == n);
      }
}

TEST_CASE("a loop kept across calls: each call covers its range, on the CPU only, the device only, or both") {
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    Controller c(test::options(p));
    for (int sides = 0; sides < 3; ++sides) {
      CAPTURE(sides);
      CountingLoop counting(c, 50000);
      LoopBody body = counting.body();
      if (sides == 1) body.device = nullptr;
      if (sides == 2) body.cpu = nullptr;
      HeteroLoop loop(c, body, {.scheduler = "logfit", .cpu_workers = 2});
      for (int step = 0; step < 3; ++step) {
        counting.reset();
        const auto report = loop(50000);
        std::size_t on_cpu = 0, on_device = 0;
        CHECK(counting.each_once(50000, on_cpu, on_device));
        if (sides == 1) CHECK(on_device == 0);
        if (sides == 2) CHECK(on_cpu == 0);
        CHECK(report.seconds > 0);
        CHECK(report.scheduler.find("logfit") != std::string::npos);
      }
    }
  }
}

// In place: a chunk reads what it writes (io()), and nothing in LoopBody::reads holds it. The device
// chunk's region goes over with it: before, every device iteration computed on a stale device image
// (tester 8: all of static:1's iterations wrong, silently), over one device or two.
TEST_CASE("an in-place loop (io() writes, no reads) computes every side's iterations from the host images") {
  constexpr std::size_t n = 20'000;
  for (Policy p : {Policy::async, Policy::sync})
    for (int devices : {1, 2})
      for (const char* scheduler : {"static:1", "logfit", "dynamic:3000", "static:0.5"}) {
        if (devices == 2 && p == Policy::sync) continue;  // several devices need async (a UsageError)
        CAPTURE(test::policy_name(p));
        CAPTURE(devices);
        CAPTURE(scheduler);
        Controller c(test::options(p));
        std::optional<Controller> other;
        if (devices == 2) other.emplace(test::options(p));
        auto y = c.tile<float>(n, "y");
        test::fill(y, 1.0f);
        Kernel twice = c.kernel_from_source(
            "kernel void twice(global float* y, ulong end) { size_t i = get_global_id(0); if (i < end) y[i] *= 2.0f; }",
            "twice");
        LoopBody body;
        body.cpu = [&](Chunk ch) {
          for (auto i = ch.begin; i < ch.end; ++i) y[i] *= 2.0f;
        };
        body.device = [&](Controller& ctl, Chunk ch) {
          ctl.launch(twice, Range(ch.size()).offset(ch.begin), io(y.region(span_of(ch))), cl_ulong(ch.end));
        };
        body.writes = [&](Chunk ch) { return std::vector{io(y.region(span_of(ch)))}; };
        std::string spec = scheduler;
        if (devices == 2 && spec == "static:1") spec = "static:0.5,0.5";
        if (devices == 2 && spec == "static:0.5") spec = "static:0.25,0.25";
        std::vector<Controller*> sides{&c};
        if (other) sides.push_back(&*other);
        HeteroLoop loop(sides, body, {.scheduler = spec});
        for (int call = 1; call <= 3; ++call) {
          CAPTURE(call);
          const auto report = loop(n);
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < n; ++i) wrong += y[i] != float(1 << call);
          CHECK(wrong == 0);
          std::size_t on_devices = 0;
          for (std::size_t s = 1; s < report.sides.size(); ++s) on_devices += report.sides[s].iterations;
          if (spec.rfind("static", 0) == 0) CHECK(on_devices > 0);
        }
      }
}

// rows_of and Tile::rows name the same rows: of a 3-D tile, on every plane (rows_of covered plane 0
// only, and a loop writing every plane lost the others' results, tester 8).
TEST_CASE("rows_of is Tile::rows' box: every plane of a 3-D tile, a UsageError for a 1-D one") {
  Controller c(test::options(Policy::async));
  auto cube = c.tile<float>(Extent(8, 16, 4), "cube");
  auto plane = c.tile<float>(Extent(8, 16), "plane");
  auto line = c.tile<float>(64, "line");
  CHECK(rows_of(cube, Chunk{2, 5}) == Box{{0, 2, 0}, {8, 3, 4}});
  CHECK(rows_of(plane, Chunk{2, 5}) == Box{{0, 2, 0}, {8, 3, 1}});
  CHECK(rows_of(cube, Chunk{2, 5}) == cube.rows(2, 3).box());
  CHECK_THROWS_AS((void)rows_of(line, Chunk{0, 1}), UsageError);
}

TEST_CASE("a loop with only a CPU body runs in few chunks under every scheduler") {
  // Half an even share of the rest per chunk (LoopScheduler::cpu_only_chunk): about
  // 2 x workers x ln(n) chunks. LogFit used to wait for a device that never asks, in 64-iteration
  // chunks (perf/bench_chunk_overhead: 16,390 chunks for 1M iterations).
  Controller c(test::options(Policy::async));
  const std::size_t n = 100000;
  for (const char* scheduler : {"logfit", "hguided", "static:0.5", "static:1", "oracle"}) {
    CAPTURE(scheduler);
    CountingLoop counting(c, n);
    LoopBody body = counting.body();
    body.device = nullptr;
    HeteroLoop loop(c, body, {.scheduler = scheduler, .cpu_workers = 2});
    for (int step = 0; step < 2; ++step) {
      for (std::size_t i = 0; i < n; ++i) counting.cpu_hits[i] = 0;
      const auto report = loop(n);
      std::size_t on_cpu = 0, on_device = 0;
      CHECK(counting.each_once(n, on_cpu, on_device));
      CHECK(on_cpu == n);
      CHECK(report.sides[0].chunks >= 2);
      CHECK(report.sides[0].chunks <= 64);
    }
  }
}

// A CPU loop of 2^56 iterations or more hung in the CPU's cost profile (its bin arithmetic wrapped).
// The body only counts its chunks' iterations: no range that large could run.
// A run-once loop paid for LogFit's first CPU chunks whole: 64 iterations each, where 64 of
// Mandelbrot 4096²'s rows through the set held a worker 0.4 s after the H200 had run the rest.
// Here each CPU iteration takes 20 ms, so a CPU chunk run whole would hold the call for seconds
// after the device (PoCL) has run every other iteration; the hand-over leaves the CPU a few pieces.
TEST_CASE("a CPU chunk the device would finish far sooner gives the device its tail, every iteration once") {
  SUBCASE("logfit and dynamic hand tails over") {
    struct Case {
      std::string scheduler;
      std::size_t cpu_chunk;  // what the scheduler hands a CPU worker here
    };
    for (const Case& k : {Case{"logfit", 64}, Case{"dynamic:640", 640}}) {
      CAPTURE(k.scheduler);
      Controller c(test::options(Policy::async));
      const std::size_t n = 20000;
      CountingLoop counting(c, n);
      HeteroLoop loop(c, counting.body_with_slow_cpu(std::chrono::milliseconds(20)),
                      {.scheduler = k.scheduler, .cpu_workers = 2});
      for (int call = 0; call < 2; ++call) {
        CAPTURE(call);
        counting.reset();
        const LoopReport report = loop(n);
        std::size_t on_cpu = 0, on_device = 0;
        CHECK(counting.each_once(n, on_cpu, on_device));
        CHECK(report.sides[0].iterations == on_cpu);
        CHECK(report.sides[1].iterations == on_device);
        // Whole, each CPU chunk would have run k.cpu_chunk iterations (LogFit's later calls hand the
        // CPU fewer: it is measured slow by then).
        if (call == 0) CHECK(on_cpu <= report.sides[0].chunks * k.cpu_chunk / 2);
      }
    }
  }
  SUBCASE("a static split is the user's: kept exactly, however slow the CPU") {
    Controller c(test::options(Policy::async));
    const std::size_t n = 400;
    CountingLoop counting(c, n);
    const LoopReport report = parallel_for(c, n, counting.body_with_slow_cpu(std::chrono::milliseconds(2)),
                                           {.scheduler = "static:0.5", .cpu_workers = 2});
    std::size_t on_cpu = 0, on_device = 0;
    CHECK(counting.each_once(n, on_cpu, on_device));
    CHECK(on_device == n / 2);
    CHECK(report.sides[1].iterations == n / 2);
  }
}

TEST_CASE("a device chunk's end is taken up between a CPU chunk's pieces when no other thread is free") {
  // Two TBB threads, the worker held by another arena: the loop's calling thread is the only one
  // here, and it runs the CPU chunks. A device chunk's hook, made ready by the driver's callback or
  // the completion poller (outside the arena), waited for the whole CPU chunk before (N-body's first
  // call on one H200: 0.4-7.3 ms, perf/RESULTS.md 2026-11-29). Now a CPU chunk runs it between its
  // pieces: device chunks are launched inside CPU chunks, where a piece ends short of a chunk's end.
  tbb::global_control two_threads(tbb::global_control::max_allowed_parallelism, 2);
  struct Blocker {
    std::atomic<bool> started{false}, release{false};
  };
  auto blocker = std::make_shared<Blocker>();
  tbb::task_arena elsewhere(1, 0);
  elsewhere.enqueue([blocker] {
    blocker->started = true;
    while (!blocker->release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  const auto asked = std::chrono::steady_clock::now();
  while (!blocker->started && std::chrono::steady_clock::now() - asked < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(blocker->started);
  struct Release {
    std::shared_ptr<Blocker> b;
    ~Release() { b->release = true; }
  } release_at_end{blocker};

  Controller c(test::options(Policy::async));
  constexpr std::size_t k = 8, n = 40 * k;  // dynamic:8: a CPU chunk is 8 pieces of one iteration, 2 ms each
  CountingLoop counting(c, n);
  LoopBody body = counting.body_with_slow_cpu(std::chrono::milliseconds(2));
  struct Piece {
    std::thread::id thread;
    Chunk chunk;
    std::chrono::steady_clock::time_point from, to;
  };
  struct Launch {
    std::thread::id thread;
    std::chrono::steady_clock::time_point at;
  };
  std::mutex m;
  std::vector<Piece> pieces;
  std::vector<Launch> launches;
  body.cpu = [&, slow = body.cpu](Chunk ch) {
    const auto from = std::chrono::steady_clock::now();
    slow(ch);
    std::lock_guard lock(m);
    pieces.push_back({std::this_thread::get_id(), ch, from, std::chrono::steady_clock::now()});
  };
  // Device chunks of a millisecond or two: ones that ended within microseconds (the H200, PoCL on 16
  // cores) had their successors launched by the calling thread before it took the CPU chunk, and the
  // device ran every chunk but the CPU's first.
  const SlowMark slow_mark(c);
  body.device = [&](Controller& ctl, Chunk ch) {
    {
      std::lock_guard lock(m);
      launches.push_back({std::this_thread::get_id(), std::chrono::steady_clock::now()});
    }
    slow_mark(ctl, counting, ch);
  };
  const LoopReport report = parallel_for(c, n, body, {.scheduler = "dynamic:8", .cpu_workers = 1});
  std::size_t on_cpu = 0, on_device = 0;
  CHECK(counting.each_once(n, on_cpu, on_device));
  REQUIRE(report.sides[0].chunks >= 1);
  std::size_t inside = 0;  // device launches between two pieces of one CPU chunk, on its thread
  for (const Launch& l : launches)
    for (const Piece& p : pieces)
      for (const Piece& q : pieces)
        if (p.chunk.end == q.chunk.begin && p.chunk.end % k != 0 && p.thread == l.thread && q.thread == l.thread &&
            p.to <= l.at && l.at <= q.from)
          ++inside;
  INFO("CPU chunks " << report.sides[0].chunks << ", device chunks " << report.sides[1].chunks);
  CHECK(inside >= 1);
}

TEST_CASE("tails of several CPU chunks run on the device at once, every iteration once") {
  // Five CPU workers whose iterations all end on the same 20 ms ticks (a piece is an iteration
  // here), a device many times faster: once the device has run its share, the CPU chunks give it
  // their tails at one tick. With its one token it ran them one after another, each launched from
  // the last one's end (N-body 32K's first call on one H200: 14 tails, one every ~0.5 ms); and a
  // chunk that saw the device neither parked nor yet running the tail just given kept its own. Now
  // each goes to the device at once, behind the others on its queue: a kernel of the loop is
  // submitted before the previous one has ended.
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 6);
  tbb::task_arena arena(6);
  std::optional<Controller> c;
  arena.execute([&] {
    ControllerOptions o = test::options(Policy::async);
    o.record = true;
    c.emplace(o);
  });
  constexpr std::size_t n = 200;
  CountingLoop counting(*c, n);
  LoopBody body = counting.body();
  body.reads.clear();  // a CPU chunk reading the whole tile would wait for the one writing before it
  body.cpu = test::on_ticks(body.cpu, std::chrono::milliseconds(20));
  const SlowMark slow_mark(*c, 1u << 18);
  body.device = [&](Controller& ctl, Chunk ch) { slow_mark(ctl, counting, ch); };
  LoopReport report;
  arena.execute([&] { report = parallel_for(*c, n, body, {.scheduler = "dynamic:20", .cpu_workers = 5}); });
  std::size_t on_cpu = 0, on_device = 0;
  CHECK(counting.each_once(n, on_cpu, on_device));
  CHECK(report.sides[0].iterations == on_cpu);
  CHECK(report.sides[1].iterations == on_device);
  // In submission order: each kernel of the loop, and the hook that ran once its chunk's kernels had
  // ended. One token per device launches a chunk's successor from that hook, or later.
  const auto records = c->records();
  std::vector<std::int64_t> kernel_submits, kernels_ended;  // per device chunk, in order
  for (const auto& r : records) {
    if (r.kind == "kernel" && r.name == "slow_mark") kernel_submits.push_back(r.submit_ns);
    if (r.kind == "host" && r.name.starts_with("device chunk [") && r.name.ends_with(" kernels"))
      kernels_ended.push_back(r.start_ns);
  }
  REQUIRE(kernel_submits.size() == report.sides[1].chunks);
  REQUIRE(kernels_ended.size() == kernel_submits.size());
  std::size_t early = 0;  // kernels submitted before the one before them had ended
  for (std::size_t i = 1; i < kernel_submits.size(); ++i)
    if (kernel_submits[i] < kernels_ended[i - 1]) ++early;
  INFO("device chunks " << report.sides[1].chunks << ", CPU chunks " << report.sides[0].chunks);
  CHECK(early >= 1);
}

TEST_CASE("a loop with only a CPU body covers ranges up to the largest size_t") {
  Controller c(test::options(Policy::async));
  for (std::size_t n : {std::size_t(1) << 56, SIZE_MAX})
    for (const char* scheduler : {"logfit", "hguided", "static:0.5", "dynamic:10000000000000000", "oracle"}) {
      CAPTURE(n);
      CAPTURE(scheduler);
      std::mutex m;
      std::vector<Chunk> chunks;
      LoopBody body;
      body.cpu = [&](Chunk ch) {
        std::lock_guard lock(m);
        chunks.push_back(ch);
      };
      body.writes = [](Chunk) { return std::vector<Access>{}; };
      HeteroLoop loop(c, body, {.scheduler = scheduler, .cpu_workers = 2});
      for (int step = 0; step < 2; ++step) {
        chunks.clear();
        const LoopReport report = loop(n);
        CHECK(report.sides[0].iterations == n);
        std::sort(chunks.begin(), chunks.end(), [](Chunk a, Chunk b) { return a.begin < b.begin; });
        std::size_t next = 0;
        bool contiguous = true;
        for (const Chunk& ch : chunks) {
          contiguous = contiguous && ch.begin == next && ch.end > ch.begin;
          next = ch.end;
        }
        CHECK(contiguous);
        CHECK(next == n);
      }
    }
}

TEST_CASE("Mandelbrot rows balanced across the CPU and the device equal the reference") {
  Controller c(test::options(Policy::async, 2));
  workloads::MandelbrotLoop m(c, {.width = 256, .height = 200, .max_iter = 256});
  LoopBody body;
  body.cpu = [&](Chunk ch) { m.cpu(ch.begin, ch.end); };
  body.device = [&](Controller& ctl, Chunk ch) { m.device(ctl, ch.begin, ch.end); };
  body.reads = m.reads();
  body.writes = [&](Chunk ch) { return m.writes(ch.begin, ch.end); };
  for (const char* scheduler : {"logfit", "hguided", "dynamic:7"}) {
    CAPTURE(scheduler);
    m.clear_output();
    parallel_for(c, m.size(), body, {.scheduler = scheduler, .cpu_workers = 2});
    const auto check = m.check(m.reference());
    CHECK_MESSAGE(check.ok(), check.str());
    CHECK(check.differing == 0);
  }
}

TEST_CASE("a chunk that fails stops the loop and is named, nothing hangs and the loop runs again") {
  Controller c(test::options(Policy::async));
  CountingLoop counting(c, 20000);
  LoopBody body = counting.body();
  std::atomic<bool> fail{true};
  auto cpu = body.cpu;
  body.cpu = [&, cpu](Chunk ch) {
    if (fail.load() && ch.begin > 0) throw std::runtime_error("bad iteration");
    cpu(ch);
  };
  HeteroLoop loop(c, body, {.scheduler = "dynamic:1000", .cpu_workers = 2});
  try {
    loop(20000);
    FAIL("no failure reported");
  } catch (const RequestFailed& e) {
    CHECK(std::string(e.what()).find("cpu chunk [") != std::string::npos);
    CHECK(std::string(e.what()).find("bad iteration") != std::string::npos);
    // The chunk's entry holds what its body threw, as a host task's does.
    REQUIRE(!e.failures().empty());
    CHECK(e.failures()[0].kind == "chunk");
    REQUIRE(e.failures()[0].exception);
    CHECK_THROWS_WITH_AS(std::rethrow_exception(e.failures()[0].exception), "bad iteration", std::runtime_error);
  }
  fail = false;
  counting.reset();
  loop(20000);
  std::size_t on_cpu = 0, on_device = 0;
  CHECK(counting.each_once(20000, on_cpu, on_device));
}

// LoopBody::writes is called as a chunk is handed out, from the hook of the chunk before: a throw
// there left the chunk taken and never ended (the call waited for ever), failed the chunk before
// instead, and for the first chunk escaped the call as it was thrown.
TEST_CASE("a chunk whose LoopBody::writes throws is refused and named, first or later, on either side") {
  struct Case {
    const char* name;
    Policy policy;
    bool cpu, device;
    std::size_t from;  // writes throws for chunks beginning here or after
    const char* side;
  };
  for (const Case& k : {Case{"device, later chunk", Policy::async, false, true, 5000, "device"},
                        Case{"device, first chunk", Policy::async, false, true, 0, "device"},
                        Case{"both sides", Policy::async, true, true, 5000, ""},
                        Case{"cpu only", Policy::async, true, false, 5000, "cpu"},
                        Case{"cpu only, first chunk", Policy::async, true, false, 0, "cpu"},
                        Case{"sync, device", Policy::sync, false, true, 5000, "device"},
                        Case{"sync, first chunk", Policy::sync, false, true, 0, "device"}}) {
    CAPTURE(k.name);
    Controller c(test::options(k.policy));
    CountingLoop counting(c, 10'000);
    LoopBody body = counting.body();
    if (!k.cpu) body.cpu = nullptr;
    if (!k.device) body.device = nullptr;
    auto writes = body.writes;
    body.writes = [&, writes](Chunk ch) {
      if (ch.begin >= k.from) throw std::runtime_error("no writes at " + std::to_string(ch.begin));
      return writes(ch);
    };
    try {
      HeteroLoop(c, body, {.scheduler = "dynamic:1000", .cpu_workers = 1})(10'000);
      FAIL("the throw was not reported");
    } catch (const RequestFailed& e) {
      REQUIRE(!e.failures().empty());
      const FailedRequest& chunk = e.failures()[0];
      CHECK(chunk.kind == "chunk");
      CHECK(chunk.name.find(std::string(k.side) + " chunk [") != std::string::npos);
      const std::size_t begin = std::stoul(chunk.name.substr(chunk.name.find('[') + 1));
      CHECK(begin >= k.from);
      CHECK(chunk.cause == "was refused: LoopBody::writes threw: no writes at " + std::to_string(begin));
      REQUIRE(chunk.exception);
      CHECK_THROWS_WITH_AS(std::rethrow_exception(chunk.exception), doctest::Contains("no writes at"),
                           std::runtime_error);
    }
    c.wait_all();  // no failure left behind: the chunk before did not fail for it
  }
}

TEST_CASE("a loop node whose LoopBody::writes throws passes its message on, failed, naming the chunk") {
  struct Msg : flow::Message {
    Tile<int> t;
  };
  Controller c(test::options(Policy::async));
  Kernel mark = c.kernel_from_source(
      "kernel void mark(global int* t, ulong end) { size_t i = get_global_id(0); if (i < end) t[i] += 1; }", "mark");
  tbb::flow::graph g;
  flow::loop_node<Msg> node(g, c,
                            [&](const Msg& m) {
                              LoopBody b;
                              auto t = m.t;
                              b.device = [t, mark](Controller& ctl, Chunk ch) {
                                ctl.launch(mark, Range(ch.size()).offset(ch.begin), io(t.region(span_of(ch))),
                                           cl_ulong(ch.end));
                              };
                              b.reads = {in(t)};
                              b.writes = [t](Chunk ch) {
                                if (ch.begin >= 5000) throw std::runtime_error("no writes");
                                return std::vector<Access>{io(t.region(span_of(ch)))};
                              };
                              return flow::Loop{10'000, b};
                            },
                            {.scheduler = "dynamic:1000"});
  std::string error;
  tbb::flow::function_node<Msg> sink(g, 1, [&](const Msg& m) { error = m.error; });
  tbb::flow::make_edge(node, sink);
  Msg m;
  m.t = c.tile<int>(10'000, "t");
  test::fill(m.t, 0);
  node.try_put(m);
  g.wait_for_all();
  CHECK(error.find("device chunk [5000, 6000): was refused: LoopBody::writes threw: no writes") != std::string::npos);
}

// A call waits on the loop's tiles at its end: the first wait that threw used to end those waits,
// so the failures of the others stayed unreported, and the input's cancelled move to the device
// cancelled every later call's kernels until a wait_all. The failed request is named first: the
// chunk that waited on it did nothing wrong (a cancelled CPU chunk was named first before).
TEST_CASE(
    "a failed request on a loop's input is reported once, by the next call, first, and the loop then runs again") {
  for (Policy policy : {Policy::async, Policy::sync}) {
    for (const char* scheduler : {"static:0.5", "dynamic:5000"}) {
      CAPTURE(policy);
      CAPTURE(scheduler);
      Controller c(test::options(policy));
      constexpr std::size_t n = 20'000;
      auto x = c.tile<int>(n, "x"), y = c.tile<int>(n, "y");
      for (std::size_t i = 0; i < n; ++i) x[i] = int(i);
      Kernel twice = c.kernel_from_source(
          "kernel void twice(global const int* x, global int* y, ulong end) {"
          "  size_t i = get_global_id(0); if (i < end) y[i] = 2 * x[i]; }",
          "twice");
      LoopBody body;
      body.cpu = [&](Chunk ch) {
        for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 2 * x[i];
      };
      body.device = [&](Controller& ctl, Chunk ch) {
        ctl.launch(twice, Range(ch.size()).offset(ch.begin), in(x), out(y.region(span_of(ch))), cl_ulong(ch.end));
      };
      body.reads = {in(x)};
      body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
      HeteroLoop loop(c, body, {.scheduler = scheduler, .cpu_workers = 1});
      c.host_task(
          "poison", [] { throw std::runtime_error("earlier request failed"); }, io(x));
      try {
        loop(n);
        FAIL("the earlier failure was not reported");
      } catch (const RequestFailed& e) {
        REQUIRE(e.failures().size() >= 2);
        CHECK(e.failures()[0].name == "poison");
        CHECK_FALSE(e.failures()[0].cancelled);
        CHECK(e.failures()[1].kind == "chunk");
        CHECK(e.failures()[1].cancelled);
        CHECK(std::count_if(e.failures().begin(), e.failures().end(),
                            [](const FailedRequest& f) { return f.name == "poison"; }) == 1);
        CHECK(std::string(e.what()).find("poison") < std::string(e.what()).find("parallel_for"));
      }
      for (int call = 0; call < 2; ++call) {
        test::fill(y, 0);
        CHECK_NOTHROW(loop(n));
        CHECK(std::all_of(y.data(), y.data() + n, [&](const int& v) { return v == 2 * int(&v - y.data()); }));
      }
      CHECK_NOTHROW(c.wait_all());
    }
  }
}

// Chunks that only waited on a failed request fail too, and may be told before the chunk whose own
// work failed (in place, a CPU chunk reading what a failed device chunk brings back was named, and
// the device chunk never). Under sync the CPU chunks go out first and the device's runs on the
// calling thread, so a CPU chunk cancelled by a failed input is told well before the device body
// throws.
TEST_CASE("the chunk whose own work failed is named first, before chunks that only waited on a failure") {
  Controller c(test::options(Policy::sync));
  CountingLoop counting(c, 20'000);
  LoopBody body = counting.body();
  body.device = [](Controller&, Chunk) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    throw std::runtime_error("the device body failed");
  };
  auto poisoned = c.tile<int>(1, "poisoned");
  body.reads.push_back(in(poisoned));
  c.host_task(
      "poison", [] { throw std::runtime_error("earlier request failed"); }, out(poisoned));
  try {
    parallel_for(c, 20'000, body, {.scheduler = "static:0.5", .cpu_workers = 1});
    FAIL("no failure reported");
  } catch (const RequestFailed& e) {
    CHECK(e.failures()[0].name.find("parallel_for device chunk [") == 0);
    CHECK(e.failures()[0].cause == "was refused: the device body failed");
  }
}

// A call ends with its own chunks: the calling thread used to run the graph's tasks until the whole
// graph was idle, so a call beside an unrelated host task lasted as long as that task (5 s in a
// program tried by hand; for ever here, where the task waits for the calling thread).
TEST_CASE("a loop call ends with its chunks, not with an unrelated host task still running") {
  Controller c(test::options(Policy::async));
  constexpr std::size_t n = 10'000;
  CountingLoop counting(c, n);
  auto other = c.tile<float>(16, "other");
  test::GatedTask unrelated(c, other);
  for (const char* scheduler : {"logfit", "dynamic:512", "static:0.5"}) {
    CAPTURE(scheduler);
    counting.reset();
    HeteroLoop loop(c, counting.body(), {.scheduler = scheduler});
    loop(n);
    std::size_t on_cpu = 0, on_device = 0;
    CHECK(counting.each_once(n, on_cpu, on_device));
  }
  unrelated.open();
  c.wait_all();
  CHECK_FALSE(unrelated.timed_out());
}

// NVIDIA's completion callbacks come up to milliseconds late, and the completion poller looks only
// now and then: a 6 ms SpMV call over two H100s ended ~1 ms after its last transfer back. Once no
// CPU chunk can start, the calling thread watches what ends the device chunks. Here
// the callbacks are dropped and the poller looks every 100 ms: a call noticed by the poller alone
// lasts 100 ms or more, one that blocks lasts what its chunks take (~1 ms on PoCL).
TEST_CASE("a loop call ends with its device chunks' last commands, not at the completion poller's next look") {
  ::setenv("HETFLOW_DEBUG_DROP_CALLBACKS", "1", 1);
  ::setenv("HETFLOW_DEBUG_POLL_US", "100000,100000", 1);
  Controller c(test::options(Policy::async));
  ::unsetenv("HETFLOW_DEBUG_DROP_CALLBACKS");
  ::unsetenv("HETFLOW_DEBUG_POLL_US");
  constexpr std::size_t n = 10'000;
  CountingLoop counting(c, n);
  struct Case {
    const char* scheduler;
    bool cpu;  // with a CPU body: the thread blocks once the hand-out is over
  };
  for (const Case& k : {Case{"static:1", false}, Case{"dynamic:2500", false}, Case{"static:0.5", true}}) {
    CAPTURE(k.scheduler);
    LoopBody body = counting.body();
    if (!k.cpu) body.cpu = nullptr;
    HeteroLoop loop(c, body, {.scheduler = k.scheduler, .cpu_workers = 1});
    for (int call = 0; call < 4; ++call) {
      CAPTURE(call);
      counting.reset();
      const auto report = loop(n);
      std::size_t on_cpu = 0, on_device = 0;
      CHECK(counting.each_once(n, on_cpu, on_device));
      CHECK(on_device > 0);
      // The first call may build the kernel for its sizes (PoCL compiles per launch shape).
      if (call > 0) CHECK(report.seconds < 0.05);
    }
  }
}

// The issue's contract: "the output region brought back by a region D2H that overlaps the next chunk's
// kernel". With one chunk in flight the next chunk used to be launched only once the last one's
// results were back; now a device's token goes on at its kernels' end. Checked from the OpenCL
// profiling times: some chunk's kernel runs while the chunk before it is still coming back.
namespace {
// y[i] = i / 2 over each chunk's region (or piece's), noting each range the body is called for:
// 16 MB to bring back for 4M iterations, long enough for the next kernel to start under it.
LoopBody halves_body(Controller& c, Tile<float>& y, std::vector<Chunk>* called = nullptr) {
  Kernel half = c.kernel_from_source(
      "kernel void half_of(global float* y, ulong end) { size_t i = get_global_id(0); if (i < end) y[i] = 0.5f * i; }",
      "half_of");
  LoopBody body;
  body.device = [half, y, called](Controller& ctl, Chunk ch) {
    if (called) called->push_back(ch);
    ctl.launch(half, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
  };
  body.writes = [y](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
  return body;
}

bool halves_right(const Tile<float>& y, std::size_t n) {
  bool all = true;
  for (std::size_t i = 0; i < n; i += 4093) all = all && y[i] == 0.5f * float(i);
  return all;
}

// From the profiling times the controller recorded: kernel k ('half_of') started before the kth
// transfer back before it had ended (one kernel queue, one D2H queue: chunk or piece k's are the
// kth of each).
bool a_kernel_ran_under_a_transfer_back(const Controller& c) {
  std::vector<RequestRecord> kernels, back;
  for (const auto& r : c.records()) {
    if (r.kind == "kernel" && r.name == "half_of") kernels.push_back(r);
    if (r.kind == "D2H") back.push_back(r);
  }
  REQUIRE(kernels.size() == back.size());
  for (std::size_t k = 1; k < kernels.size(); ++k)
    if (kernels[k].start_ns < back[k - 1].end_ns) return true;
  return false;
}
}  // namespace

TEST_CASE("a device chunk's kernel runs while the chunk before it comes back, with one chunk in flight") {
  ControllerOptions options = test::options(Policy::async);
  options.record = true;  // and so profiling
  Controller c(options);
  // 8 chunks, 16 MB back each: a transfer back lasts longer than a chunk's end takes to be noticed
  // and the next kernel to start (~0.1 ms on one H100, where 4 MB took 0.08: the check failed once).
  constexpr std::size_t n = 32u << 20, chunk = 4u << 20;
  auto y = c.tile<float>(n, "y");
  HeteroLoop loop(c, halves_body(c, y), {.scheduler = "dynamic:" + std::to_string(chunk)});
  bool overlapped = false;
  for (int call = 0; call < 3 && !overlapped; ++call) {
    std::fill(y.data(), y.data() + n, -1.0f);
    const auto report = loop(n);
    CHECK(report.sides[1].iterations == n);
    CHECK(report.sides[1].chunks == n / chunk);
    CHECK(halves_right(y, n));
    overlapped = a_kernel_ran_under_a_transfer_back(c);
  }
  CHECK(overlapped);
}

namespace {
// Static's chunks, each launched in four pieces (LoopScheduler::device_chunk's `piece`: LogFit asks
// for pieces where a share's transfer back would hold the call's end).
struct InFourPieces : hetflow::detail::StaticScheduler {
  using StaticScheduler::StaticScheduler;
  std::size_t next_device(unsigned d, std::size_t remaining, double now) override {
    const std::size_t chunk = StaticScheduler::next_device(d, remaining, now);
    piece_ = (chunk + 3) / 4;
    return chunk;
  }
};
}  // namespace

// One chunk, one hand-out, one report; four launches of the body, each piece's transfer back
// submitted with it, so it runs while the next piece's kernel does (until 2026-11-28 LogFit cut a
// share into chunks handed out one at a time, each a round trip, and the CPU workers asking in
// between found the rest's front in the device's share: Mandelbrot on the H200, docs/parallel-for.md).
TEST_CASE("a device chunk launched in pieces brings each piece back while the next one's kernel runs") {
  ControllerOptions options = test::options(Policy::async);
  options.record = true;  // and so profiling
  Controller c(options);
  constexpr std::size_t n = 32u << 20;
  auto y = c.tile<float>(n, "y");
  std::vector<Chunk> launched;
  const LoopBody body = halves_body(c, y, &launched);
  detail::LoopState loop(
      std::vector<Controller*>{&c}, {}, detail::engine_of(c).flow_topology().add_node("loop", "parallel_for"),
      [](unsigned workers, unsigned devices) { return std::make_unique<InFourPieces>(workers, devices, 1.0); });
  loop.set_body(body);
  bool overlapped = false;
  for (int call = 0; call < 3 && !overlapped; ++call) {
    std::fill(y.data(), y.data() + n, -1.0f);
    launched.clear();
    const auto report = loop.run(n);
    CHECK(report.sides[1].iterations == n);
    CHECK(report.sides[1].chunks == 1);
    REQUIRE(launched.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) CHECK(launched[k].begin == k * (n / 4));
    CHECK(launched[3].end == n);
    CHECK(halves_right(y, n));
    overlapped = a_kernel_ran_under_a_transfer_back(c);
  }
  CHECK(overlapped);
}

namespace {
// A kernel `name(global int* y, ulong end)` that writes 1 over its range of y, below `end`.
Kernel ones_kernel(Controller& c, const std::string& name) {
  return c.kernel_from_source(
      "kernel void " + name + "(global int* y, ulong end) { size_t i = get_global_id(0); if (i < end) y[i] = 1; }",
      name);
}
}  // namespace

// A device chunk's kernel that faults (HETFLOW_DEBUG_FAULT_KERNEL plays NVIDIA's part, as in
// tests/test_device_faults.cpp: the launch ends with a fault status and the controller is lost): the
// call ends, with or without CPU workers (then the calling thread watches the chunks' ends), and says
// which kernel faulted; nothing hangs.
TEST_CASE("a device chunk whose kernel faults ends the call with the fault named, with or without a CPU body") {
  for (Policy policy : {Policy::async, Policy::sync})
    for (bool with_cpu : {false, true}) {
      CAPTURE(policy);
      CAPTURE(with_cpu);
      ::setenv("HETFLOW_DEBUG_FAULT_KERNEL", "oob", 1);
      Controller c(test::options(policy));
      ::unsetenv("HETFLOW_DEBUG_FAULT_KERNEL");
      constexpr std::size_t n = 40'000;
      auto y = c.tile<int>(n, "y");
      Kernel oob = ones_kernel(c, "oob");
      LoopBody body;
      std::atomic<bool> device_called{false};
      body.device = [&](Controller& ctl, Chunk ch) {
        device_called = true;
        ctl.launch(oob, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
      };
      // Under sync the CPU's chunks go out first and the device's on the calling thread: a worker
      // that took every chunk before it left the device nothing to fault (seen once under ctest -j2).
      // So a CPU chunk waits (5 s at most) until the device has had one.
      if (with_cpu)
        body.cpu = [&](Chunk ch) {
          for (int ms = 0; ms < 5000 && !device_called; ++ms) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 2;
        };
      body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
      HeteroLoop loop(c, body, {.scheduler = "dynamic:10000", .cpu_workers = 1});
      try {
        loop(n);
        FAIL("the fault was not reported");
      } catch (const DeviceLost& e) {
        // The call's waits found the controller lost: DeviceLost, with what RequestFailed would say.
        // The first chunk that failed, then the requests' failures. With a CPU body that may be a CPU
        // chunk refused once the fault lost the controller (seen under ThreadSanitizer's timing).
        REQUIRE(e.failures().size() >= 2);
        CHECK(e.failures()[0].kind == "chunk");
        CHECK(e.failures()[0].name.find(with_cpu ? " chunk [" : "device chunk [") != std::string::npos);
        CHECK(std::string(e.what()).find("'oob'") != std::string::npos);
      }
    }
}

// A device chunk waited only for the launches writing what its hooks name: a kernel on in() tiles
// alone (a write through an argument declared in(), a computation nothing tracks) still ran when
// its chunk, and the call, had ended.
TEST_CASE("a device chunk ends only once every launch of its body has, those writing no tile it tracks included") {
  for (Policy policy : {Policy::async, Policy::sync})
    for (bool steps_on_workers : {false, true})
      for (bool tracked_write : {true, false}) {
        if (policy == Policy::async && steps_on_workers) continue;
        CAPTURE(policy);
        CAPTURE(steps_on_workers);  // under sync: a launch may return before its command is enqueued
        CAPTURE(tracked_write);
        if (steps_on_workers) ::setenv("HETFLOW_DEBUG_STEPS_ON_WORKERS", "1", 1);
        Controller c(test::options(policy));  // recording: the records say whether the launch has ended
        ::unsetenv("HETFLOW_DEBUG_STEPS_ON_WORKERS");
        constexpr std::size_t n = 64;
        auto y = c.tile<int>(n, "y"), z = c.tile<int>(n, "z");
        test::fill(z, 0);
        c.move_to(z);  // not among the loop's reads: the call's own waits at its end do not cover it
        Kernel fill = ones_kernel(c, "fill");
        // Tens of milliseconds on PoCL: still running when the rest of its chunk has long ended.
        Kernel slow = c.kernel_from_source(
            "kernel void slow(global int* z, int spins) { int acc = (int)get_global_id(0);"
            " for (int i = 0; i < spins; ++i) acc = acc * 1664525 + 1013904223; z[get_global_id(0)] = acc; }",
            "slow");
        LoopBody body;
        body.device = [&](Controller& ctl, Chunk ch) {
          if (tracked_write)
            ctl.launch(fill, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
          ctl.launch(slow, Range(ch.size()).offset(ch.begin), in(z), 2'000'000);  // writes z, declared in()
        };
        body.writes = [&](Chunk ch) {
          return tracked_write ? std::vector<Access>{out(y.region(span_of(ch)))} : std::vector<Access>{};
        };
        parallel_for(c, n, body, {.scheduler = "dynamic:64"});
        const auto records = c.records();
        int slows = 0;
        for (const auto& r : records)
          if (r.name == "slow") {
            ++slows;
            CHECK(r.status == "done");
          }
        CHECK(slows == 1);
        if (tracked_write) CHECK(test::all_equal(y, 1));
        c.wait_all();
      }
}

// Under sync the calling thread runs the device's chunks, and reported a refusal without its
// exception or a kernel's failure without the chunk.
TEST_CASE("a chunk refused at submission is a RequestFailed naming the chunk, holding what its submission threw") {
  for (Policy policy : {Policy::async, Policy::sync}) {
    CAPTURE(policy);
    Controller c(test::options(policy));
    constexpr std::size_t n = 10'000;
    auto y = c.tile<int>(n, "y");
    Kernel fill = ones_kernel(c, "fill");
    LoopBody body;
    body.device = [&](Controller& ctl, Chunk ch) {
      ctl.launch(fill, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))));  // one argument short
    };
    body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
    HeteroLoop loop(c, body, {.scheduler = "dynamic:1000"});
    try {
      loop(n);
      FAIL("the refusal was not reported");
    } catch (const RequestFailed& e) {
      REQUIRE(!e.failures().empty());
      const FailedRequest& chunk = e.failures()[0];
      CHECK(chunk.kind == "chunk");
      CHECK(chunk.id == 0);
      CHECK(chunk.name == "parallel_for device chunk [0, 1000)");
      CHECK(chunk.cause.find("was refused: launch of kernel 'fill'") != std::string::npos);
      CHECK(std::string(e.what()).find("chunk 'parallel_for device chunk [0, 1000)' failed: was refused") !=
            std::string::npos);
      REQUIRE(chunk.exception);
      CHECK_THROWS_AS(std::rethrow_exception(chunk.exception), UsageError);
    }
    // The loop runs again once its body is right.
    body.device = [&](Controller& ctl, Chunk ch) {
      ctl.launch(fill, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
    };
    HeteroLoop fixed(c, body, {.scheduler = "dynamic:1000"});
    fixed(n);
    CHECK(std::all_of(y.data(), y.data() + n, [](int v) { return v == 1; }));
  }
}

// A chunk's writes may overlap other chunks' (the header: those chunks wait for each other). A device
// chunk brought all of its writes back, and with every chunk writing out(y) its copy of the device's
// image, never written outside the chunk's range, overwrote the CPU chunks' results.
TEST_CASE("chunks whose writes overlap wait for each other, and a device chunk brings back only what it launched") {
  for (Policy policy : {Policy::async, Policy::sync}) {
    CAPTURE(policy);
    Controller c(test::options(policy));
    constexpr std::size_t n = 20'000;
    auto y = c.tile<int>(n, "y");
    Kernel fill = ones_kernel(c, "fill");
    LoopBody body;
    body.cpu = [&](Chunk ch) {
      for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 1;
    };
    body.device = [&](Controller& ctl, Chunk ch) {
      ctl.launch(fill, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
    };
    body.writes = [&](Chunk) { return std::vector<Access>{out(y)}; };
    HeteroLoop loop(c, body, {.scheduler = "dynamic:500", .cpu_workers = 2});
    for (int call = 0; call < 3; ++call) {
      CAPTURE(call);
      test::fill(y, 0);
      const LoopReport report = loop(n);
      CHECK(report.sides[0].iterations + report.sides[1].iterations == n);
      CHECK(std::count(y.data(), y.data() + n, 1) == std::ptrdiff_t(n));
    }
  }
}

// A histogram: every chunk reads and writes one counter (io()), the CPU by ++, the device by
// atomic_inc. A CPU chunk submitted between a device chunk's transfer over and its transfer back
// ran in between, and the transfer back overwrote its counts: 3-40 % lost, whole chunks at a time,
// most under sync (a user's trial, 2026-11-29). A chunk's requests now follow one another.
TEST_CASE("chunks that all read and write one region (io) lose no update, under every scheduler and policy") {
  for (Policy policy : {Policy::async, Policy::sync}) {
    for (const char* scheduler : {"logfit", "dynamic:100", "hguided"}) {
      CAPTURE(policy);
      CAPTURE(scheduler);
      Controller c(test::options(policy));
      constexpr std::size_t n = 100'000;
      auto hist = c.tile<cl_uint>(1, "hist");
      Kernel count = c.kernel_from_source(
          "kernel void count(global uint* hist, ulong end) { if (get_global_id(0) < end) atomic_inc(&hist[0]); }",
          "count");
      LoopBody body;
      body.cpu = [&](Chunk ch) {
        for (std::size_t i = ch.begin; i < ch.end; ++i) ++hist[0];
      };
      body.device = [&](Controller& ctl, Chunk ch) {
        ctl.launch(count, Range((ch.size() + 63) / 64 * 64).offset(ch.begin), io(hist), cl_ulong(ch.end));
      };
      body.writes = [&](Chunk) { return std::vector<Access>{io(hist)}; };
      HeteroLoop loop(c, body, {.scheduler = scheduler});
      for (int call = 0; call < 4; ++call) {
        CAPTURE(call);
        hist[0] = 0;
        const LoopReport report = loop(n);
        CHECK(report.sides[0].iterations + report.sides[1].iterations == n);
        CHECK(hist[0] == n);
      }
    }
  }
}

// The header refuses a device chunk that launches nothing; on the home device it was let through,
// and its transfers back brought the device's untouched image over the results, no error.
TEST_CASE("a device chunk that launches nothing is refused on the one device too, naming the chunk") {
  for (Policy policy : {Policy::async, Policy::sync}) {
    CAPTURE(policy);
    Controller c(test::options(policy));
    constexpr std::size_t n = 1000;
    auto y = c.tile<int>(n, "y");
    LoopBody body;
    body.cpu = [&](Chunk ch) {
      for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 1;
    };
    body.device = [](Controller&, Chunk) {};
    body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
    try {
      parallel_for(c, n, body, {.scheduler = "static:0.5", .cpu_workers = 1});
      FAIL("a device chunk that launched nothing was not refused");
    } catch (const RequestFailed& e) {
      REQUIRE(!e.failures().empty());
      const FailedRequest& chunk = e.failures()[0];
      CHECK(chunk.name.find("parallel_for device chunk [") == 0);
      CHECK(chunk.cause.find("submitted no launch") != std::string::npos);
      REQUIRE(chunk.exception);
      CHECK_THROWS_AS(std::rethrow_exception(chunk.exception), UsageError);
    }
  }
}

// Every launch of a device body is its chunk's: one the driver refused on a scratch tile outside the
// chunk's writes let the call return as if all went well, and its failure came out of the next
// wait_all().
TEST_CASE("a device chunk whose body's scratch launch the driver refuses fails the call, naming the chunk") {
  const auto driver_refuses = test::driver_sees_wrong_local_sizes();  // a wrong local size reaches the driver
  for (Policy policy : {Policy::async, Policy::sync})
    for (bool with_cpu : {false, true}) {
      CAPTURE(policy);
      CAPTURE(with_cpu);
      Controller c(test::options(policy));
      constexpr std::size_t n = 10'000;
      auto y = c.tile<int>(n, "y");
      auto scratch = c.device_tile<int>(64, "scratch");
      Kernel fill = ones_kernel(c, "fill");
      // A work-group size the launch below does not give: the driver refuses it at enqueue.
      Kernel strict = c.kernel_from_source(
          "kernel __attribute__((reqd_work_group_size(64, 1, 1))) void strict(global int* s) { s[get_global_id(0)] = "
          "1; }",
          "strict");
      LoopBody body;
      body.device = [&](Controller& ctl, Chunk ch) {
        ctl.launch(strict, Range(64).local(32), out(scratch));
        ctl.launch(fill, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
      };
      if (with_cpu)
        body.cpu = [&](Chunk ch) {
          for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 1;
        };
      body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
      try {
        parallel_for(c, n, body, {.scheduler = "static:0.5", .cpu_workers = 1});
        FAIL("the refused launch was not reported by the call");
      } catch (const RequestFailed& e) {
        REQUIRE(!e.failures().empty());
        CHECK(e.failures()[0].kind == "chunk");
        CHECK(e.failures()[0].name.find("parallel_for device chunk [") == 0);
        CHECK(std::string(e.what()).find("'strict'") != std::string::npos);
      }
      CHECK_NOTHROW(c.wait_all());  // reported once, by the call
    }
}

// The chunk named first is the one whose own work failed, and its cause said so in the words of a
// chunk cancelled by another's failure: "request #2 'strict' that it depends on failed".
TEST_CASE("a device chunk whose own kernel the driver refuses is named with that kernel and the driver's reason") {
  const auto driver_refuses = test::driver_sees_wrong_local_sizes();  // a wrong local size reaches the driver
  for (Policy policy : {Policy::async, Policy::sync}) {
    CAPTURE(policy);
    Controller c(test::options(policy));
    constexpr std::size_t n = 10'000;
    auto y = c.tile<int>(n, "y");
    Kernel strict = c.kernel_from_source(
        "kernel __attribute__((reqd_work_group_size(64, 1, 1))) void strict(global int* y, ulong end) {"
        " size_t i = get_global_id(0); if (i < end) y[i] = 1; }",
        "strict");
    LoopBody body;
    body.device = [&](Controller& ctl, Chunk ch) {
      ctl.launch(strict, Range((ch.size() + 31) / 32 * 32).offset(ch.begin).local(32), out(y.region(span_of(ch))),
                 cl_ulong(ch.end));
    };
    body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
    try {
      parallel_for(c, n, body, {.scheduler = "dynamic:1000"});
      FAIL("the refused kernel was not reported");
    } catch (const RequestFailed& e) {
      REQUIRE(!e.failures().empty());
      const FailedRequest& chunk = e.failures()[0];
      CHECK(chunk.name == "parallel_for device chunk [0, 1000)");
      CHECK(chunk.cause.find("its kernel 'strict' (request #") == 0);
      CHECK(chunk.cause.find("CL_INVALID_WORK_GROUP_SIZE") != std::string::npos);
      CHECK(chunk.cause.find("that it depends on") == std::string::npos);
    }
  }
}

// A device-only tile has no host image for CPU chunks to read: with one device its refusal came from
// a CPU chunk's hook, in the words of an internal on_ready hook, after the device's chunks had run.
TEST_CASE("a device-only tile in a loop's reads or constants is refused at the call when the loop has a CPU body") {
  Controller c(test::options(Policy::async));
  constexpr std::size_t n = 1000;
  auto y = c.tile<int>(n, "y");
  auto scratch = c.device_tile<int>(n, "scratch");
  Kernel fill = ones_kernel(c, "fill");
  LoopBody body;
  body.cpu = [&](Chunk ch) {
    for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 1;
  };
  body.device = [&](Controller& ctl, Chunk ch) {
    ctl.launch(fill, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
  };
  body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
  LoopBody reads = body, constants = body;
  reads.reads = {in(scratch)};
  constants.constants = {in(scratch)};
  CHECK_THROWS_WITH_AS(parallel_for(c, n, reads, {.scheduler = "static:0.5"}),
                       doctest::Contains("tile 'scratch' is in LoopBody::reads but is device-only"), UsageError);
  CHECK_THROWS_WITH_AS(parallel_for(c, n, constants, {.scheduler = "static:0.5"}),
                       doctest::Contains("tile 'scratch' is in LoopBody::constants but is device-only"), UsageError);
  // Without a CPU body the device's launches use it as it is.
  reads.cpu = nullptr;
  test::fill(y, 0);
  parallel_for(c, n, reads, {.scheduler = "static:0.5"});
  CHECK(std::count(y.data(), y.data() + n, 1) == std::ptrdiff_t(n));
  CHECK_NOTHROW(c.wait_all());
}

TEST_CASE("the dump shows what a loop's scheduler decided at its last call, through to_json and from_json") {
  ControllerOptions options = test::options(Policy::async);
  options.record = true;
  Controller c(options);
  constexpr std::size_t n = 20'000;
  CountingLoop counting(c, n);
  HeteroLoop logfit(c, counting.body(), {.scheduler = "logfit", .cpu_workers = 1});
  for (int call = 0; call < 3; ++call) logfit(n);
  HeteroLoop fixed(c, counting.body(), {.scheduler = "static:0.5", .cpu_workers = 1});
  LoopReport last = fixed(n);
  const GraphInfo info = graph_info(c);
  REQUIRE(info.flow_nodes.size() == 2);
  CHECK(info.flow_nodes[0].kind == "parallel_for");
  CHECK(info.flow_nodes[0].messages == 3);
  // LogFit's line: its phase per device and what it measured (LoopScheduler::decisions).
  CHECK(info.flow_nodes[0].state.find("logfit") != std::string::npos);
  CHECK(info.flow_nodes[0].state.find("device 0") != std::string::npos);
  CHECK(info.flow_nodes[0].state.find("work/s") != std::string::npos);
  CHECK(info.flow_nodes[1].state.rfind(last.scheduler + ": ", 0) == 0);
  const auto [records, back] = hetflow::from_json(to_json(c.records(), info));
  REQUIRE(back.flow_nodes.size() == 2);
  CHECK(back.flow_nodes[0].state == info.flow_nodes[0].state);
  CHECK(back.flow_nodes[1].state == info.flow_nodes[1].state);
}

TEST_CASE("misuse is refused with what is wrong") {
  Controller c(test::options(Policy::async));
  CountingLoop counting(c, 100);
  CHECK_THROWS_WITH_AS(HeteroLoop(c, counting.body(), {.scheduler = "fastest"}), doctest::Contains("unknown scheduler"),
                       UsageError);
  CHECK_THROWS_WITH_AS(HeteroLoop(c, counting.body(), {.scheduler = "static:1.5"}), doctest::Contains("0 to 1"),
                       UsageError);
  CHECK_THROWS_WITH_AS(HeteroLoop(c, counting.body(), {.scheduler = "dynamic:0"}), doctest::Contains("positive"),
                       UsageError);
  CHECK_THROWS_WITH_AS(HeteroLoop(c, counting.body(), {.scheduler = "logfit:3"}), doctest::Contains("no parameter"),
                       UsageError);
  CHECK_THROWS_WITH_AS(HeteroLoop(c, LoopBody{}, {}), doctest::Contains("neither"), UsageError);
  std::atomic<bool> refused{false};
  c.host_task("inside", [&] {
    try {
      parallel_for(c, 100, counting.body());
    } catch (const UsageError&) {
      refused = true;
    }
  });
  c.wait_all();
  CHECK(refused.load());

  // A second call of one loop while the first runs (another thread) is refused, and the first ends.
  auto x = c.tile<float>(1000, "x");
  std::atomic<bool> first_running{false}, second_refused{false};
  LoopBody slow;
  slow.cpu = [&](Chunk ch) {
    first_running = true;
    for (int i = 0; i < 5000 && !second_refused; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (auto i = ch.begin; i < ch.end; ++i) x[i] = 1.0f;
  };
  slow.writes = [&](Chunk ch) { return std::vector<Access>{out(x.region(span_of(ch)))}; };
  HeteroLoop loop(c, slow, {.scheduler = "dynamic:100", .cpu_workers = 1});
  std::string second_error;
  std::thread second([&] {
    while (!first_running) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    try {
      loop(1000);
    } catch (const UsageError& e) {
      second_error = e.what();
    }
    second_refused = true;
  });
  const LoopReport first = loop(1000);
  second.join();
  CHECK(second_error.find("already running a call") != std::string::npos);
  CHECK(first.sides[0].iterations == 1000);
  CHECK(loop(1000).sides[0].iterations == 1000);  // and the loop serves the next call
}

TEST_CASE("the device is served while every CPU worker is busy, however many workers are asked for") {
  // Seed 002's flaw (its Fig. 47): with a CPU token per thread, the device's completions found no
  // thread and the device idled until the CPU ran out of chunks. Here each CPU chunk waits (asleep,
  // leaving the cores to the device) until the device has started 4 chunks: a starved device never
  // does, and the waits run out.
  const unsigned threads = tbb_threads();
  if (threads < 2) {
    MESSAGE("one TBB thread: the CPU chunk and the device take turns on it; nothing to check");
    return;
  }
  Controller c(test::options(Policy::async));
  // Each side marks its own regions (the CPU 2, the device 1); nothing one side writes is read by the
  // other, so no chunk waits for another's hazards.
  auto mark = c.kernel_from_source(
      "kernel void mark(global int* y, ulong end) { size_t i = get_global_id(0); if (i < end) y[i] = 1; }", "mark");
  for (unsigned asked : {0u, threads, 2 * threads}) {
    CAPTURE(asked);
    const std::size_t n = 64 * (std::size_t(threads) + 16);  // more chunks than CPU workers
    auto y = c.tile<int>(n, "y");
    test::fill(y, 0);
    std::mutex m;
    std::condition_variable started;
    int device_chunks = 0, cpu_waits_ran_out = 0;
    LoopBody body;
    body.device = [&](Controller& ctl, Chunk ch) {
      {
        std::lock_guard lock(m);
        ++device_chunks;
      }
      started.notify_all();
      ctl.launch(mark, Range(ch.size()).offset(ch.begin), out(y.region(span_of(ch))), cl_ulong(ch.end));
    };
    body.cpu = [&](Chunk ch) {
      {
        std::unique_lock lock(m);
        // Once one wait ran out, the others do not wait: a starved loop fails in 20 s, not in one per chunk.
        const auto served = [&] { return device_chunks >= 4 || cpu_waits_ran_out > 0; };
        if (!started.wait_for(lock, std::chrono::seconds(20), served)) ++cpu_waits_ran_out;
      }
      for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = 2;
    };
    body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
    const auto report = parallel_for(c, n, body, {.scheduler = "dynamic:64", .cpu_workers = asked});
    std::size_t on_cpu = 0, on_device = 0;
    for (std::size_t i = 0; i < n; ++i) {
      on_cpu += y[i] == 2;
      on_device += y[i] == 1;
    }
    CHECK(on_cpu == report.sides[0].iterations);
    CHECK(on_device == report.sides[1].iterations);
    CHECK(on_cpu + on_device == n);
    CHECK(cpu_waits_ran_out == 0);
    CHECK(device_chunks >= 4);
    CHECK(report.cpu_workers == (asked == 0 ? threads - 1 : std::min(asked, threads - 1)));
  }
}

TEST_CASE("under async the device's first chunk is handed out before the CPU workers' (it leads the range)") {
  // docs/parallel-for.md "How a call runs": the CPU workers' hand-out took 0.2 ms of a 1.2 ms
  // N-body call the device waited out when the CPU went first.
  Controller c(test::options(Policy::async));
  for (int call = 0; call < 3; ++call) {
    CAPTURE(call);
    CountingLoop counting(c, 64 * 40);
    LoopBody body = counting.body();
    std::mutex m;
    std::vector<std::size_t> device_begins;
    body.device = [&, device = body.device](Controller& ctl, Chunk ch) {
      {
        std::lock_guard lock(m);
        device_begins.push_back(ch.begin);
      }
      device(ctl, ch);
    };
    const auto report = parallel_for(c, 64 * 40, body, {.scheduler = "dynamic:64", .cpu_workers = 1});
    std::size_t on_cpu = 0, on_device = 0;
    CHECK(counting.each_once(64 * 40, on_cpu, on_device));
    REQUIRE_FALSE(device_begins.empty());
    CHECK(device_begins.front() == 0);
    CHECK(report.sides[1].chunks == device_begins.size());
  }
}

// LoopBody::constants: moved once for the loop's calls, where reads are moved every call; after
// constants_changed() once more, and the device then computes from the new values, under sync and async.
TEST_CASE("a loop's constants are moved to the device once, its reads every call") {
  for (Policy policy : {Policy::async, Policy::sync}) {
    CAPTURE(policy);
    Controller c{test::options(policy)};
    const std::size_t n = 3000;
    auto a = c.tile<float>(n, "a");
    auto x = c.tile<float>(1, "x");
    auto y = c.tile<float>(n, "y");
    for (std::size_t i = 0; i < n; ++i) a[i] = float(i % 31);
    auto scaled = c.kernel_from_source(
        "kernel void scaled(global const float* a, global const float* x, global float* y, ulong end) {"
        "  size_t i = get_global_id(0); if (i < end) y[i] = a[i] * x[0]; }",
        "scaled");
    LoopBody body;
    body.cpu = [&](Chunk ch) {
      for (std::size_t i = ch.begin; i < ch.end; ++i) y[i] = a[i] * x[0];
    };
    body.device = [&](Controller& ctl, Chunk ch) {
      ctl.launch(scaled, Range(ch.size()).offset(ch.begin), in(a), in(x), out(y.region(span_of(ch))), cl_ulong(ch.end));
    };
    body.reads = {in(x)};
    body.constants = {in(a)};
    body.writes = [&](Chunk ch) { return std::vector<Access>{out(y.region(span_of(ch)))}; };
    HeteroLoop loop(c, body, {.scheduler = "static:1"});
    auto moves_of = [&](const std::string& tile) {
      std::size_t moves = 0;
      for (const auto& r : c.records()) moves += r.name == "move_to(" + tile + ")";
      return moves;
    };
    auto call_and_check = [&](float factor, float xv) {
      x[0] = xv;
      test::fill(y, -1.0f);
      loop(n);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i) wrong += y[i] != factor * float(i % 31) * xv;
      CHECK(wrong == 0);
    };
    for (int call = 1; call <= 3; ++call) call_and_check(1.0f, float(call));
    CHECK(moves_of("a") == 1);
    CHECK(moves_of("x") == 3);
    // Changed on the host and said so: moved again, once.
    for (std::size_t i = 0; i < n; ++i) a[i] = 2.0f * float(i % 31);
    loop.constants_changed();
    call_and_check(2.0f, 5.0f);
    call_and_check(2.0f, 6.0f);
    CHECK(moves_of("a") == 2);
    CHECK(moves_of("x") == 5);
    // CPU chunks read a constant's host image after an earlier request writing it (async: the host
    // task is still sleeping when the loop's chunks are handed out).
    if (policy == Policy::async) {
      HeteroLoop on_cpu(c, body, {.scheduler = "static:0"});
      c.host_task(
          "rewrite a",
          [&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            for (std::size_t i = 0; i < n; ++i) a[i] = 3.0f * float(i % 31);
          },
          out(a));
      x[0] = 1.0f;
      on_cpu(n);
      std::size_t stale = 0;
      for (std::size_t i = 0; i < n; ++i) stale += y[i] != 3.0f * float(i % 31);
      CHECK(stale == 0);
      for (std::size_t i = 0; i < n; ++i) a[i] = 2.0f * float(i % 31);
      loop.constants_changed();
    }
    // A constant the chunks write is refused, naming it; the loop stays usable.
    LoopBody writes_constant = body;
    writes_constant.constants = {in(y)};
    HeteroLoop bad(c, writes_constant, {.scheduler = "static:1"});
    try {
      bad(n);
      FAIL("a loop writing its constant ran");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find("tile 'y' is in LoopBody::constants and among the chunks' writes") !=
            std::string::npos);
    }
    call_and_check(2.0f, 7.0f);
  }
}

// Both checks at the call work on regions and roles as the hazards do (a user's trial, 2026-11-29):
// a constant row beside the rows the chunks write was refused as if written; a device-only tile
// among a CPU body's writes was refused only once a CPU chunk came, in an internal hook's words.
TEST_CASE("a loop's constant region beside the written ones runs, a device-only write with a CPU body is refused") {
  Controller c(test::options(Policy::async));
  constexpr std::size_t n = 5000;
  auto t = c.tile<float>(n + 1, "t");
  Kernel after_first = c.kernel_from_source(
      "kernel void after_first(global float* t, ulong end) {"
      "  size_t i = get_global_id(0); if (i < end) t[1 + i] = t[0] + (float)i; }",
      "after_first");
  const auto rest = [&](Chunk ch) { return t.region(Box{{1 + ch.begin, 0, 0}, {ch.size(), 1, 1}}); };
  LoopBody body;
  body.cpu = [&](Chunk ch) {
    for (std::size_t i = ch.begin; i < ch.end; ++i) t[1 + i] = t[0] + float(i);
  };
  body.device = [&](Controller& ctl, Chunk ch) {
    ctl.launch(after_first, Range(ch.size()).offset(ch.begin), out(rest(ch)), cl_ulong(ch.end));
  };
  body.constants = {in(t.region(Box{{0, 0, 0}, {1, 1, 1}}))};
  body.writes = [&](Chunk ch) { return std::vector<Access>{out(rest(ch))}; };
  t[0] = 0.5f;
  HeteroLoop loop(c, body, {.scheduler = "static:0.5"});
  loop(n);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += t[1 + i] != 0.5f + float(i);
  CHECK(wrong == 0);

  auto scratch = c.device_tile<float>(n, "scratch");
  LoopBody scratch_written = body;
  scratch_written.constants = {};
  scratch_written.writes = [&](Chunk ch) { return std::vector<Access>{out(rest(ch)), out(scratch)}; };
  for (const char* scheduler : {"static:1", "static:0", "logfit"}) {
    CAPTURE(scheduler);
    CHECK_THROWS_WITH_AS(parallel_for(c, n, scratch_written, {.scheduler = scheduler}),
                         doctest::Contains("tile 'scratch' is among the chunks' writes (LoopBody::writes) but is "
                                           "device-only: CPU chunks write the host images"),
                         UsageError);
  }
  c.wait_all();
}

TEST_CASE("hetflow run runs the loop workloads with a scheduler, verified, and refuses a bad one") {
  const std::string cli = test::program_beside_or("hetflow", HETFLOW_CLI_PATH);
  for (const char* w : {"mandelbrot --size 96", "nbody --size 512", "spmv --size 10", "barneshut --size 3000"}) {
    CAPTURE(w);
    const auto r = test::run_command(cli + " run " + w + " --calls 2 --scheduler hguided --cpu-workers 1 --verify");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("verify against the sequential reference") != std::string::npos);
    CHECK(r.output.find("0 beyond tolerance") != std::string::npos);
  }
  // HETFLOW_LOG=debug tells what each side was given and what the scheduler was told of it.
  const auto logged = test::run_command("HETFLOW_LOG=debug " + cli +
                                        " run nbody --size 512 --calls 1 --scheduler dynamic:128 --cpu-workers 1");
  INFO(logged.output);
  CHECK(logged.status == 0);
  CHECK(logged.output.find("parallel_for: cpu chunk [") != std::string::npos);
  CHECK(logged.output.find("ms, round trip ") != std::string::npos);
  // hetflow dump says what the loop's scheduler had learned at its last call.
  const std::string dump =
      (std::filesystem::temp_directory_path() / ("hetflow_loop_dump_" + std::to_string(::getpid()) + ".json")).string();
  const auto dumped = test::run_command(cli + " run mandelbrot --size 96 --calls 3 --cpu-workers 1 --dump " + dump +
                                        " && " + cli + " dump " + dump + " --dot " + dump + ".dot");
  INFO(dumped.output);
  CHECK(dumped.status == 0);
  CHECK(dumped.output.find("parallel_for 'parallel_for' after 3 calls: logfit: device 0 ") != std::string::npos);
  for (const char* beside : {".dot", ".flow.dot"}) std::filesystem::remove(hetflow::dump_companion(dump, beside));
  std::filesystem::remove(dump);
  std::filesystem::remove(dump + ".dot");
  const auto bad = test::run_command(cli + " run barneshut --scheduler fastest");
  INFO(bad.output);
  CHECK(bad.status != 0);
  CHECK(bad.output.find("unknown scheduler") != std::string::npos);
  // Two device chunks in flight, the second queued behind the first.
  const auto slots = test::run_command(cli + " run spmv --size 10 --calls 3 --device-slots 2 --cpu-workers 1 --verify");
  INFO(slots.output);
  CHECK(slots.status == 0);
  CHECK(slots.output.find("0 beyond tolerance") != std::string::npos);
  const auto no_chunks = test::run_command(cli + " run sobel --device-slots 2");
  INFO(no_chunks.output);
  CHECK(no_chunks.status != 0);
  CHECK(no_chunks.output.find("--device-slots is for the loop workloads") != std::string::npos);
}

TEST_CASE(
    "a loop body's roles are checked: reads and constants in() only, chunk writes out() or io() inside their tile") {
  Controller c(test::options(Policy::async));
  CountingLoop counting(c, 1000);
  const auto& hits = counting.device_hits;
  for (const bool in_constants : {false, true}) {
    LoopBody body = counting.body();
    (in_constants ? body.constants : body.reads) = {out(hits)};
    const std::string expected = std::string("LoopBody::") + (in_constants ? "constants" : "reads") +
                                 " holds out(tile 'device_hits'): every chunk only reads it, give in(device_hits)";
    CHECK_THROWS_WITH_AS(HeteroLoop(c, body, {}), doctest::Contains(expected.c_str()), UsageError);
  }
  // Each refused at its first chunk, named, on either side: an in() write's results were never
  // brought back, and a region past the tile was refused as an internal hook's.
  struct Case {
    const char* name;
    bool cpu, device;
    std::function<Box(Chunk)> box;
    Role role;
    std::string cause;
  };
  const auto exact = [](Chunk ch) { return span_of(ch); };
  for (const Case& k :
       {Case{"in() on the device", false, true, exact, Role::in,
             "gave in(tile 'device_hits'), but a chunk's writes are out() or io()"},
        Case{"in() on the CPU", true, false, exact, Role::in,
             "gave in(tile 'device_hits'), but a chunk's writes are out() or io()"},
        Case{"past the tile on the device", false, true,
             [](Chunk ch) {
               return Box{{ch.begin, 0, 0}, {ch.size() + 5000, 1, 1}};
             },
             Role::out,
             "gave a region outside its tile: region [0:5100) is out of the bounds of tile 'device_hits' ([0:1000))"},
        Case{"past the tile on the CPU", true, false,
             [](Chunk ch) {
               return Box{{ch.begin + 990, 0, 0}, {ch.size(), 1, 1}};
             },
             Role::io,
             "gave a region outside its tile: region [990:1090) is out of the bounds of tile 'device_hits' "
             "([0:1000))"}}) {
    CAPTURE(k.name);
    LoopBody body = counting.body();
    if (!k.cpu) body.cpu = nullptr;
    if (!k.device) body.device = nullptr;
    body.writes = [&](Chunk ch) {
      const auto r = hits.region(k.box(ch));
      return std::vector<Access>{k.role == Role::in ? in(r) : k.role == Role::out ? out(r) : io(r)};
    };
    try {
      HeteroLoop(c, body, {.scheduler = "dynamic:100", .cpu_workers = 1})(1000);
      FAIL("the call succeeded");
    } catch (const RequestFailed& e) {
      REQUIRE(!e.failures().empty());
      CHECK(e.failures()[0].name == std::string("parallel_for ") + (k.cpu ? "cpu" : "device") + " chunk [0, 100)");
      CHECK(e.failures()[0].cause ==
            "was refused: LoopBody::writes for chunk [0, 100) " + k.cause +
                (k.role == Role::in ? " (what every chunk only reads goes in LoopBody::reads)" : ""));
      CHECK_THROWS_AS(std::rethrow_exception(e.failures()[0].exception), UsageError);
    }
    c.wait_all();
  }
}
