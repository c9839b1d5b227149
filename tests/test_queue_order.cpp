// The order commands reach an in-order queue in (docs/architecture.md, "Host → device edges"): a
// command held behind a host task is overtaken by later commands of its queue that do not depend on
// it, whether or not they wait on another queue's command. Keeping program order for the latter (so
// that one cannot sit at the queue's head waiting while the earlier one queues behind it) was tried
// and dropped: it made them depend on a host task they do not depend on, and a program that waits
// for one before letting that task end hung. Device times from OpenCL profiling.
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>

#include "engine.hpp"
#include "opencl_streaming.hpp"
#include "support.hpp"

using namespace hetflow;

namespace {

ControllerOptions in_order_async() {
  ControllerOptions o = test::options(Policy::async);
  o.queue_order = QueueOrder::in_order;
  return o;
}

}  // namespace

TEST_CASE("in order: an H2D that waits on a kernel is not held behind an unrelated host task") {
  Controller c(in_order_async());
  constexpr std::size_t n = 1 << 16;
  auto a = c.tile<float>(n, "a"), b = c.tile<float>(n, "b"), copy_of_b = c.tile<float>(n, "copy_of_b");
  test::fill(b, 2.0f);
  Kernel copy = c.kernel_from_source(
      "kernel void copy(global const float* s, global float* d) { size_t i = get_global_id(0); d[i] = s[i]; }", "copy");
  c.move_to(b);
  c.launch(copy, Range(n), in(b), out(copy_of_b));  // reads b's device image
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  c.host_task(
      "gated fill", [a, gate]() mutable { gate.wait(), test::fill(a, 1.0f); }, out(a));
  c.move_to(a);  // held behind the host task
  c.move_to(b);  // overwrites b's device image once the kernel has read it (WAR on the kernel queue)
  // The host task ends only once the program has seen b's second H2D done: held behind move_to(a),
  // that H2D would never run.
  auto b_there = std::async(std::launch::async, [&] { c.wait(b); });
  const bool done = b_there.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  open.set_value();
  b_there.get();
  c.move_from(copy_of_b);
  c.wait_all();
  CHECK(done);
  CHECK(test::all_equal(copy_of_b, 2.0f));
  const auto recs = c.records();
  CHECK(test::interval(recs, "move_to(b)", 1).end <= test::interval(recs, "move_to(a)").start);
}

TEST_CASE("in order: an H2D that waits on nothing still overtakes one held behind a host task") {
  Controller c(in_order_async());
  constexpr std::size_t n = 1024;
  auto a = c.tile<float>(n, "a"), z = c.tile<float>(n, "z");
  test::fill(z, 3.0f);
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  c.host_task(
      "gated fill", [a, gate]() mutable { gate.wait(), test::fill(a, 1.0f); }, out(a));
  c.move_to(a);  // held behind the host task
  c.move_to(z);  // independent: on the device while the host task still blocks
  auto z_there = std::async(std::launch::async, [&] { c.wait(z); });
  const bool overtook = z_there.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  open.set_value();
  z_there.get();
  c.wait_all();
  CHECK(overtook);
  const auto recs = c.records();
  CHECK(test::interval(recs, "move_to(z)").end <= test::interval(recs, "move_to(a)").start);
}

TEST_CASE("a wait list leaves out a predecessor that another predecessor waited on") {
  using namespace hetflow::detail;
  auto transfer = [](const char* name) { return make_request<TransferWork>(Kind::h2d, name); };
  RequestPtr older = transfer("older"), newer = transfer("newer"), other = transfer("other");
  older->id = 1;  // numbered in program order, as the engine does: only a newer one waits on an older
  other->id = 2;
  newer->id = 3;
  RequestList running{older, newer};
  CHECK_FALSE(StreamingStep::waited_on_by_another(running, 2, 0));  // newer waited on nothing yet
  newer->running_preds.push_back(older);
  CHECK(StreamingStep::waited_on_by_another(running, 2, 0));        // implied by newer's event
  CHECK_FALSE(StreamingStep::waited_on_by_another(running, 2, 1));  // newer itself stays
  running = {older, other, newer};
  CHECK(StreamingStep::waited_on_by_another(running, 3, 0));
  CHECK_FALSE(StreamingStep::waited_on_by_another(running, 3, 1));
  // Only among r's running predecessors: one past `count` implies nothing.
  CHECK_FALSE(StreamingStep::waited_on_by_another(running, 2, 0));
  // An older one never waited on a newer one: not looked at (listed by hand: the engine never makes such a pair).
  other->running_preds.push_back(newer);
  CHECK_FALSE(StreamingStep::waited_on_by_another(running, 3, 2));
  other->running_preds.clear();
  // A wide fan-in is not looked at (it would cost count^2 lookups).
  RequestList wide(9);
  for (std::size_t i = 0; i < wide.size(); ++i) {
    wide[i] = transfer("w");
    wide[i]->id = i + 1;
  }
  wide[7]->running_preds.push_back(wide[0]);
  CHECK(StreamingStep::waited_on_by_another(wide, 8, 0));
  CHECK_FALSE(StreamingStep::waited_on_by_another(wide, 9, 0));
}

// A command that ended well settles everything it waited on that the engine had not seen end
// (ReceiverStep::settle_running_preds): a chain of launches PoCL had not run yet when a wait came walks
// back through thousands. Each must be settled, and the walk must not expand a request twice: with
// two predecessors each (i-1 and i-2, as transfers alternating between the copy queues have), a
// walk that did would take 2^n steps and never end. One predecessor lies further back than the
// walk's bitmap reaches. No driver is asked: a command that ended well implies its predecessors did.
TEST_CASE("a command that ended well settles every predecessor it waited on, however long and wide the chain") {
  using namespace hetflow::detail;
  Controller c(test::options(Policy::async));
  Engine& engine = engine_of(c);
  constexpr std::uint64_t chain = 5000, far_back = std::uint64_t(1) << 30;
  auto transfer = [](std::uint64_t id) {
    RequestPtr r = make_request<TransferWork>(Kind::h2d, "t" + std::to_string(id));
    r->id = id;
    return r;
  };
  RequestList made{transfer(1)};  // the far one, 2^30 before the others
  for (std::uint64_t i = 1; i <= chain; ++i) {
    RequestPtr t = transfer(far_back + i);
    t->running_preds.push_back(made[i - 1]);
    if (i >= 2) t->running_preds.push_back(made[i - 2]);
    made.push_back(t);
  }
  RequestPtr r = transfer(far_back + chain + 1);
  r->running_preds = {made[chain], made[chain - 1]};
  RequestList failed;
  CHECK(engine.receiver_step().settle_running_preds(*r, true, failed));
  CHECK(failed.empty());
  std::size_t done = 0;
  for (const auto& m : made) done += m->status.load() == Status::done;
  CHECK(done == made.size());
  for (auto& m : made) m->running_preds.clear();  // finish cleared them; a failed walk may not have
}
