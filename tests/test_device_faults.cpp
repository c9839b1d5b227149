// Device faults (docs/drivers.md, "Device faults"): a kernel that faults is a failed request whose
// dependants are cancelled, however its completion is seen; a fault that takes the context with it
// leaves the controller lost — the wait that finds it so, and every later request, tile and wait,
// throws DeviceLost naming the fault (the wait's with the failures it reports) — with host data
// intact and a destructor that returns. On PoCL (CI) a faulting kernel
// would kill the process, so HETFLOW_DEBUG_FAULT_KERNEL plays the driver's part: launches of the
// named kernel end with NVIDIA's fault status and the context probe fails. perf/run-gpu.sh runs
// tests/programs/device_fault_main.cpp with a real fault on the H200.
#include <cstdlib>

#include "process.hpp"
#include "support.hpp"

using namespace hetflow;

namespace {

struct InjectedFault {
  InjectedFault() { ::setenv("HETFLOW_DEBUG_FAULT_KERNEL", "oob", 1); }
  ~InjectedFault() { ::unsetenv("HETFLOW_DEBUG_FAULT_KERNEL"); }
};

Kernel oob_kernel(Controller& c) {
  // In bounds: the injection fakes the fault (a real one would crash PoCL's CPU device).
  return c.kernel_from_source("kernel void oob(global int* x) { x[get_global_id(0) % 10] = 1; }", "oob");
}

// The faulting kernel writes x, then x comes back: a D2H the driver runs, which must not be done.
Tile<int> faulting_kernel_then_move_from(Controller& c) {
  auto x = c.tile<int>(10, "x");
  c.launch(oob_kernel(c), Range(10), out(x));
  c.move_from(x);
  return x;
}

bool reported_cancelled(const std::vector<FailedRequest>& failures, const std::string& name) {
  for (const auto& f : failures)
    if (f.name == name && f.cancelled) return true;
  return false;
}

bool reported_fault(const std::vector<FailedRequest>& failures) {
  for (const auto& f : failures)
    if (f.name == "oob" && !f.cancelled && f.cause.find("CL_ERROR(-9999)") != std::string::npos) return true;
  return false;
}

template <class F>
void check_lost(F&& f, const char* what) {
  CAPTURE(what);
  try {
    f();
    FAIL("no DeviceLost");
  } catch (const DeviceLost& e) {
    const std::string m = e.what();
    CHECK(m.find("'oob'") != std::string::npos);
    CHECK(m.find("Make a new Controller") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("a faulting kernel, in a process of its own per configuration: reported, controller lost, a new one works") {
  const char* configs[] = {"async 1", "async 3", "sync 1"};
  const char* paths[] = {"", "HETFLOW_DEBUG_STEPS_ON_WORKERS=1 ", "HETFLOW_DEBUG_DROP_CALLBACKS=1 "};
  for (const char* path : paths)
    for (const char* cfg : configs) {
      const std::string command =
          std::string("HETFLOW_DEBUG_FAULT_KERNEL=oob ") + path + HETFLOW_DEVICE_FAULT_PATH + " " + cfg;
      CAPTURE(command);
      const auto r = test::run_command(command);
      INFO(r.output);
      CHECK(r.status == 0);
      CHECK(r.output.find("device_fault: all as documented") != std::string::npos);
    }
}

TEST_CASE("a fault is seen however completion arrives: a host task waiting on it, a blocking wait, polling alone") {
  InjectedFault fault;
  for (Policy p : {Policy::async, Policy::sync})
    for (bool drop_callbacks : {false, true}) {
      CAPTURE(test::policy_name(p));
      CAPTURE(drop_callbacks);
      if (drop_callbacks) ::setenv("HETFLOW_DEBUG_DROP_CALLBACKS", "1", 1);
      {
        Controller c(test::options(p));
        auto k = oob_kernel(c);
        auto x = c.tile<int>(10, "x"), y = c.tile<int>(10, "y");
        test::fill(y, 3);
        c.launch(k, Range(10), out(x));
        bool ran = false, refused = false;
        std::vector<FailedRequest> reported;
        try {
          c.move_from(x);  // under sync it blocks until the fault is seen: its wait finds the controller lost
          c.host_task(
              "reads x", [&ran] { ran = true; }, in(x));  // waits for the D2H, which waited for the kernel
        } catch (const DeviceLost& e) {
          // Under async the engine may have seen the fault already (a poll, a pruning of finished
          // accesses): then the host task is refused. Either way the failures are left to a wait.
          refused = true;
          CHECK(e.failures().empty());
        }
        if (p == Policy::sync) CHECK(refused);
        try {
          c.wait(x);
          FAIL("wait(x) returned normally after the fault");
        } catch (const DeviceLost& e) {
          reported.insert(reported.end(), e.failures().begin(), e.failures().end());
        }
        CHECK(reported_fault(reported));
        CHECK(reported_cancelled(reported, "move_from(x)"));
        CHECK(reported_cancelled(reported, "reads x") != refused);
        CHECK_FALSE(ran);
        check_lost([&] { c.move_to(y); }, "move_to after the fault");
        CHECK(test::all_equal(y, 3));
      }
      ::unsetenv("HETFLOW_DEBUG_DROP_CALLBACKS");
    }
}

TEST_CASE("a lost controller refuses every request, tile and wait at once, and loses no host data") {
  InjectedFault fault;
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    Controller c(test::options(p, 3));
    auto k = oob_kernel(c);
    auto x = c.tile<int>(10, "x"), kept = c.tile<int>(10, "kept");
    c.host_task(
        "writes kept",
        [kept]() mutable {
          for (int i = 0; i < 10; ++i) kept[i] = 100 + i;
        },
        out(kept));
    c.launch(k, Range(10), out(x));
    try {
      c.move_from(x);  // under sync its own wait finds the fault, and leaves the failures to wait_all
    } catch (const DeviceLost& e) {
      CHECK(p == Policy::sync);
      CHECK(e.failures().empty());
    }
    try {
      c.wait_all();
      FAIL("wait_all() returned normally after the fault");
    } catch (const DeviceLost& e) {
      CHECK(reported_fault(e.failures()));  // the fault itself, once
    }
    check_lost([&] { c.move_to(kept); }, "move_to");
    check_lost([&] { c.move_from(x); }, "move_from");
    check_lost([&] { c.launch(k, Range(10), out(x)); }, "launch");
    check_lost(
        [&] {
          c.host_task(
              "h", [] {}, in(kept));
        },
        "host_task");
    check_lost([&] { (void)c.tile<int>(10, "late"); }, "tile");
    check_lost([&] { (void)c.device_tile<int>(10, "late"); }, "device_tile");
    check_lost([&] { c.wait(kept); }, "wait");
    check_lost([&] { c.wait_all(); }, "wait_all");
    for (int i = 0; i < 10; ++i) CHECK(kept[i] == 100 + i);
  }  // destructors return
  Controller fresh(test::options(Policy::async));
  auto f = fresh.kernel_from_source("kernel void fill(global int* x) { x[get_global_id(0)] = 5; }", "fill");
  auto z = fresh.tile<int>(100, "z");
  fresh.launch(f, Range(100), out(z));
  fresh.move_from(z);
  fresh.wait_all();
  CHECK(test::all_equal(z, 5));
}

TEST_CASE("a command after a faulting one on the device, whose own status is fine, is cancelled, not done") {
  // The driver ran the D2H after the kernel; the engine must not report data a faulted kernel
  // left behind as a success, whatever order it learns the two outcomes in.
  InjectedFault fault;
  Controller c(test::options(Policy::async));
  auto x = faulting_kernel_then_move_from(c);
  try {
    c.wait(x);  // blocks on the D2H, the newest command: the kernel's outcome is settled first
    FAIL("wait(x) returned normally");
  } catch (const DeviceLost& e) {
    CHECK(reported_cancelled(e.failures(), "move_from(x)"));
  }
}

TEST_CASE("a transfer whose wait list leaves out a predecessor another one waited on is still cancelled by its fault") {
  // move_to(x) depends on the kernel (WAW on the device image) and on move_from(x), which waited on
  // the kernel: only move_from's event goes in its wait list (StreamingStep::waited_on_by_another),
  // and the kernel's fault must still cancel it.
  InjectedFault fault;
  Controller c(test::options(Policy::async));
  auto x = faulting_kernel_then_move_from(c);
  c.move_to(x);
  try {
    c.wait_all();
    FAIL("wait_all() returned normally");
  } catch (const DeviceLost& e) {
    CHECK(reported_cancelled(e.failures(), "move_from(x)"));
    CHECK(reported_cancelled(e.failures(), "move_to(x)"));
  }
}

TEST_CASE("the wait that finds the controller lost throws DeviceLost, carrying the failures it reports") {
  // A fault shows only in its command's status: the wait that read it threw RequestFailed, and only
  // the next call said that the controller was lost, so a program went on retrying on a dead one.
  InjectedFault fault;
  for (Policy p : {Policy::async, Policy::sync})
    for (const char* how : {"wait(x)", "wait_all()"}) {
      CAPTURE(test::policy_name(p));
      CAPTURE(how);
      Controller c(test::options(p));
      auto x = c.tile<int>(10, "x");
      c.launch(oob_kernel(c), Range(10), out(x));
      bool refused = false;
      try {
        c.move_from(x);
      } catch (const DeviceLost& e) {
        // Under sync it blocks, and its wait is the one that finds the fault: it says so, and
        // leaves the failures to a wait as a blocking request does. Under async the engine may
        // have seen the fault already, and refuses it.
        CHECK(e.failures().empty());
        refused = true;
      }
      if (p == Policy::sync) CHECK(refused);
      const bool d2h_submitted = p == Policy::sync || !refused;
      try {
        if (std::string(how) == "wait(x)")
          c.wait(x);
        else
          c.wait_all();
        FAIL("no DeviceLost");
      } catch (const DeviceLost& e) {
        const std::string m = e.what();
        CHECK(e.reason().find("'oob'") != std::string::npos);
        CHECK(m.find("Make a new Controller") != std::string::npos);
        CHECK(m.find("request #") != std::string::npos);  // what() lists the failures too
        CHECK(reported_fault(e.failures()));
        if (d2h_submitted) CHECK(reported_cancelled(e.failures(), "move_from(x)"));
      } catch (const RequestFailed& e) {
        FAIL("RequestFailed from the wait that found the controller lost: " << e.what());
      }
      // Each failure is reported once: the next wait has none left, and still says lost.
      try {
        c.wait_all();
        FAIL("wait_all() returned normally on a lost controller");
      } catch (const DeviceLost& e) {
        CHECK(e.failures().empty());
      }
    }
  // Nobody waited: the destructor finds the fault itself, and logs it.
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    CHECK_NOTHROW([p] {
      Controller c(test::options(p));
      auto x = c.tile<int>(10, "x");
      c.launch(oob_kernel(c), Range(10), out(x));
    }());
  }
}

TEST_CASE("a failed clFlush is reported, names the call, and loses the controller instead of hanging") {
  ::setenv("HETFLOW_DEBUG_FAIL_FLUSH", "1", 1);
  for (Policy p : {Policy::async, Policy::sync}) {
    CAPTURE(test::policy_name(p));
    Controller c(test::options(p));
    // Large enough that its copy is still running when a wait looks at it, so the wait flushes: a
    // command PoCL has already run unflushed needs no flush (and the engine settles it unasked).
    auto x = c.tile<float>(std::size_t(1) << 22, "x");
    test::fill(x, 1.0f);
    std::string message;
    try {
      // The first flush comes at a queue's policy's own time (src/flush_policy.hpp: after 8 commands
      // at the latest), or when a wait needs one.
      for (int i = 0; i < 32; ++i) {
        c.move_to(x);
        c.host_task(
            "reads x", [] {}, io(x));
        c.wait(x);
      }
    } catch (const Error& e) {
      message = e.what();
    }
    CHECK(message.find("clFlush of queue") != std::string::npos);
    CHECK(message.find("CL_OUT_OF_RESOURCES") != std::string::npos);
    CHECK_THROWS_AS(c.move_to(x), DeviceLost);
  }
  ::unsetenv("HETFLOW_DEBUG_FAIL_FLUSH");
}
