// Independent launches of one kernel on the bands of a grid, many at once: the pattern the region
// API invites, and the one that aborted PoCL < 7.0 inside its kernel cache (docs/drivers.md, "One
// kernel, several launches at once"). Each run is checked against the host reference.
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "process.hpp"
#include "workloads/banded_heat.hpp"
#include "support.hpp"

using namespace hetflow;

namespace {

struct Config {
  Policy policy;
  const char* order;  // HETFLOW_QUEUE_ORDER
  unsigned kernel_queues;
  std::string env() const {
    return std::string("HETFLOW_POLICY=") + to_string(policy) + " HETFLOW_QUEUE_ORDER=" + order +
           " HETFLOW_KERNEL_QUEUES=" + std::to_string(kernel_queues);
  }
};

std::string banded_heat_program() { return test::program_beside_or("banded_heat", HETFLOW_BANDED_HEAT_PATH); }

// PoCL 3.1 leaks a reference to a kernel variant on each launch, which hides the fault once a
// process has run a few launches: so most repetitions are fresh processes (the program in
// tests/programs/banded_heat_main.cpp), two controllers of two runs each.
void in_fresh_processes(const Config& cfg, int processes) {
  const std::string program = banded_heat_program();
  for (int p = 0; p < processes; ++p) {
    const auto r = test::run_command(cfg.env() + " " + program + " 2 2");
    INFO("process " << p << " of " << processes << " (" << cfg.env() << "):\n" << r.output);
    REQUIRE(r.status == 0);
  }
}

// Later PoCL releases leak nothing, so long-lived processes meet the fault too.
void in_this_process(const Config& cfg, int controllers, int runs_each) {
  const hetflow::workloads::HeatShape shape;
  const std::vector<float> expected = hetflow::workloads::heat_reference(shape);
  for (int n = 0; n < controllers; ++n) {
    ControllerOptions o;
    o.policy = cfg.policy;
    o.kernel_queues = cfg.kernel_queues;
    o.queue_order = std::string(cfg.order) == "in-order" ? QueueOrder::in_order : QueueOrder::out_of_order;
    Controller c(o);
    for (int r = 0; r < runs_each; ++r) {
      CAPTURE(n);
      CAPTURE(r);
      REQUIRE(hetflow::workloads::banded_heat(c, shape) == expected);
    }
  }
}

const Config kConfigs[] = {{Policy::async, "out-of-order", 1},
                           {Policy::async, "out-of-order", 3},
                           {Policy::async, "in-order", 1},
                           {Policy::async, "in-order", 3}};

}  // namespace

// 4 configurations x 64 processes x 4 runs = 1,024 runs of 160 launches in fresh processes.
TEST_CASE("banded launches of one kernel, fresh processes: async, out of order, 1 kernel queue") {
  in_fresh_processes(kConfigs[0], 64);
}
TEST_CASE("banded launches of one kernel, fresh processes: async, out of order, 3 kernel queues") {
  in_fresh_processes(kConfigs[1], 64);
}
TEST_CASE("banded launches of one kernel, fresh processes: async, in order, 1 kernel queue") {
  in_fresh_processes(kConfigs[2], 64);
}
TEST_CASE("banded launches of one kernel, fresh processes: async, in order, 3 kernel queues") {
  in_fresh_processes(kConfigs[3], 64);
}
TEST_CASE("banded launches of one kernel, fresh processes: sync") {
  in_fresh_processes({Policy::sync, "in-order", 1}, 4);
}

TEST_CASE("banded launches of one kernel, one process: every queue order, 1 and 3 kernel queues") {
  for (const auto& cfg : kConfigs) {
    CAPTURE(cfg.env());
    in_this_process(cfg, 3, 10);
  }
}

// Two controllers at once on one device, each running the same kernel file: PoCL's kernel cache
// is shared by the whole process.
TEST_CASE("banded launches of one kernel: two controllers in two threads at once") {
  const hetflow::workloads::HeatShape shape;
  const std::vector<float> expected = hetflow::workloads::heat_reference(shape);
  auto body = [&](int* mismatches) {
    ControllerOptions o;
    o.policy = Policy::async;
    o.kernel_queues = 2;
    Controller c(o);
    for (int r = 0; r < 20; ++r) *mismatches += hetflow::workloads::banded_heat(c, shape) != expected;
  };
  int bad_a = 0, bad_b = 0;
  std::thread t1(body, &bad_a), t2(body, &bad_b);
  t1.join();
  t2.join();
  CHECK(bad_a == 0);
  CHECK(bad_b == 0);
}
