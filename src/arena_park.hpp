#pragma once
// A thread that waits as a TBB thread of its arena: it runs whatever tasks come there and sleeps in
// TBB when there are none, as oneTBB's own waits do, until a handle it gave out is destroyed. A
// task_group's wait for one deferred task gives exactly that: the task never runs, and destroying
// its handle unrun (from any thread) ends the wait. What the engine's waits and a loop's call use to
// return with their own requests, where graph::wait_for_all() would wait for the whole graph to be
// idle (docs/architecture.md, "Threads and sanitizers").
#include <tbb/task_group.h>

namespace hetflow::detail {

class ArenaPark {
 public:
  // The handle whose destruction ends wait(); one per wait.
  tbb::task_handle wake() {
    return group_.defer([] {});
  }
  void wait() { group_.wait(); }

 private:
  tbb::task_group_context context_{tbb::task_group_context::isolated};
  tbb::task_group group_{context_};
};

}  // namespace hetflow::detail
