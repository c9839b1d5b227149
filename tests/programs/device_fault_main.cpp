// device_fault [sync|async] [kernel queues]: a kernel that writes far out of bounds on a GPU,
// then what a user would do next — as tests/test_device_faults.cpp (on a GPU) and perf/run-gpu.sh
// run it, each case in a process of its own (a faulting kernel may spoil the driver's state for
// the rest of the process). Prints one line per step; exit 0 when everything behaved as
// docs/drivers.md, "Device faults", says it must:
//   1. the wait that finds the fault throws DeviceLost naming the kernel (under sync the blocking
//      move_from's own wait, which leaves the failures to a wait); wait_all's failures() hold the
//      kernel and the dependant D2H, cancelled;
//   2. the controller stays lost: the next request and the next wait throw DeviceLost naming the kernel;
//   3. the host image of a tile is still readable and holds what the host wrote;
//   4. the destructor returns;
//   5. a new Controller on the same device runs a healthy pipeline correctly — or, where the driver
//      refuses new contexts after a fault (NVIDIA's does, for the rest of the process), its
//      constructor throws a hetflow::Error saying so.
// With HETFLOW_DEBUG_FAULT_KERNEL=oob (CI, on PoCL, whose CPU device would simply crash) the kernel
// writes in bounds and the engine's fault injection plays the driver's part.
#include <hetflow/hetflow.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace hetflow;

namespace {
int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "WRONG", what.c_str());
  if (!ok) ++failures;
}
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
}  // namespace

int main(int argc, char** argv) {
  ControllerOptions o;
  o.policy = argc > 1 && !std::strcmp(argv[1], "sync") ? Policy::sync : Policy::async;
  o.kernel_queues = argc > 2 ? unsigned(std::atoi(argv[2])) : 1u;
  {
    Controller c(o);
    std::printf("device: %s, policy %s, %u kernel queue(s)\n", c.device().name.c_str(),
                o.policy == Policy::sync ? "sync" : "async", *o.kernel_queues);
    // 2^38 ints past the tile: no allocation reaches that far (4e8 did not fault every time).
    const bool injected = std::getenv("HETFLOW_DEBUG_FAULT_KERNEL") != nullptr;
    auto k =
        c.kernel_from_source(injected ? "kernel void oob(global int* x) { x[get_global_id(0) % 10] = 1; }"
                                      : "kernel void oob(global int* x) { x[get_global_id(0) + (1UL << 38)] = 1; }",
                             "oob");
    auto x = c.tile<int>(10, "x"), kept = c.tile<int>(10, "kept");
    for (int i = 0; i < 10; ++i) kept[i] = 40 + i;
    c.move_to(kept);
    c.wait(kept);
    try {
      c.launch(k, Range(1024), out(x));
      try {
        c.move_from(x);
      } catch (const DeviceLost& e) {  // under sync it blocks: its wait is the one that finds the fault
        std::printf("DeviceLost from move_from: %s\n", e.what());
        expect(o.policy == Policy::sync, "only a blocking move_from finds the fault itself");
        expect(e.failures().empty(), "a blocking request leaves the failures to a wait");
      }
      c.wait_all();
      expect(false, "the wait after the faulting kernel threw DeviceLost (it returned normally)");
    } catch (const DeviceLost& e) {
      const std::string m = e.what();
      std::printf("DeviceLost from wait_all: %s\n", m.c_str());
      expect(contains(e.reason(), "'oob'"), "DeviceLost names the kernel");
      bool kernel_failed = false, d2h_cancelled = false;
      for (const auto& f : e.failures()) {
        kernel_failed |= f.name == "oob" && !f.cancelled;
        d2h_cancelled |= f.name == "move_from(x)" && f.cancelled;
      }
      expect(kernel_failed, "its failures() report the kernel as failed");
      expect(d2h_cancelled, "the D2H that depends on it is reported cancelled");
    } catch (const std::exception& e) {
      expect(false, std::string("the wait that found the fault threw DeviceLost, not: ") + e.what());
    }
    try {
      c.move_to(kept);
      c.wait(kept);
      expect(false, "the next request and wait threw DeviceLost (they returned normally)");
    } catch (const DeviceLost& e) {
      std::printf("DeviceLost: %s\n", e.what());
      expect(contains(e.what(), "'oob'"), "DeviceLost names the kernel that faulted");
    } catch (const std::exception& e) {
      expect(false, std::string("the next request threw DeviceLost, not: ") + e.what());
    }
    try {
      auto t = c.tile<int>(1000, "after");
      expect(false, "a tile made after the loss threw DeviceLost");
    } catch (const DeviceLost&) {
      expect(true, "a tile made after the loss throws DeviceLost");
    } catch (const std::exception& e) {
      expect(false, std::string("a tile made after the loss threw DeviceLost, not: ") + e.what());
    }
    bool intact = true;
    for (int i = 0; i < 10; ++i) intact &= kept[i] == 40 + i;
    expect(intact, "the host image of tile 'kept' is readable and intact");
    std::printf("destroying the lost controller\n");
  }
  expect(true, "the lost controller's destructor returned");
  try {
    Controller c(o);
    auto k = c.kernel_from_source("kernel void fill(global int* x, int v) { x[get_global_id(0)] = v; }", "fill");
    auto y = c.tile<int>(1000, "y");
    c.launch(k, Range(1000), out(y), 7);
    c.move_from(y);
    try {
      c.wait_all();
      bool right = true;
      for (int i = 0; i < 1000; ++i) right &= y[i] == 7;
      expect(right, "a new controller on the same device runs a healthy pipeline");
    } catch (const std::exception& e) {
      expect(false, std::string("a new controller on the same device works: ") + e.what());
    }
  } catch (const Error& e) {
    std::printf("the driver refuses a new controller on the same device: %s\n", e.what());
    expect(!std::getenv("HETFLOW_DEBUG_FAULT_KERNEL"), "a refused new controller is the driver's doing, not hetflow's");
  }
  std::printf("%s\n", failures ? "device_fault: WRONG" : "device_fault: all as documented");
  return failures ? 1 : 0;
}
