#pragma once
// The dispatcher node (docs/architecture.md, "The flow of a request"): serial, in program order. It
// alone owns the hazard tracker: a request's declared accesses become edges to the requests it must
// follow, and then the request is armed on the host side (host tasks, hooks, waits, frees) or, a
// device request, held behind its host predecessors until the streaming node may enqueue it. Its step
// runs in the node's serial body, or on a submitting thread while the node is idle (under the
// engine's submit mutex): either way one at a time, so nothing here takes a lock. It never blocks.
#include <cstddef>
#include <vector>

#include "dependency_tracker.hpp"
#include "request.hpp"

namespace hetflow::detail {

class Engine;

class DispatchStep {
 public:
  // `keep_completed`: a recording controller keeps edges to requests already done, for the dumps.
  DispatchStep(Engine& engine, bool keep_completed);
  void dispatch(const RequestPtr& r);
  std::size_t tracked_accesses() const;  // for tests, while the node is idle

 private:
  using Tracker = DependencyTracker<RequestPtr>;
  void wait_preds(Request& wait);                    // what a wait waits for
  void track_hazards(const RequestPtr& r);           // r's hazards (and their records)
  void hold_behind_host_preds(const RequestPtr& r);  // a device request's host → device edges
  void track_untracked(const RequestPtr& r);         // a request the tracker does not hold, for wait_all
  bool is_done(const RequestPtr& r);

  Engine& engine_;
  Tracker tracker_;
  RequestList untracked_;  // requests without tile accesses, and frees
  std::vector<Tracker::Edge> edge_scratch_;
};

}  // namespace hetflow::detail
