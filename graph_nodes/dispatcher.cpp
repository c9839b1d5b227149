// The dispatcher: serial, in program order. Turns a request's declared accesses into hazard edges
// (docs/architecture.md, "Hazards"), then hands device requests to the streaming node and arms host-side requests
// (host tasks, waits, frees) to run when their predecessors complete. It never blocks.
#include "dispatcher.hpp"

#include "access_plan.hpp"
#include "engine.hpp"
#include "log.hpp"

namespace hetflow::detail {

DispatchStep::DispatchStep(Engine& engine, bool keep_completed) : engine_(engine) {
  tracker_.keep_completed(keep_completed);
  tracker_.edge_regions(keep_completed);  // only records show them
}

bool DispatchStep::is_done(const RequestPtr& r) {
  // The common answers without a call: the tracker asks for each access it holds, every request.
  const Status s = r->status.load(std::memory_order_acquire);
  if (s == Status::done) return true;
  if (s == Status::pending) return false;
  return engine_.is_done(r);
}

std::size_t DispatchStep::tracked_accesses() const { return tracker_.size() + untracked_.size(); }

void DispatchStep::track_untracked(const RequestPtr& r) {
  if (untracked_.size() >= 64) std::erase_if(untracked_, [&](const RequestPtr& x) { return is_done(x); });
  untracked_.push_back(r);
}

void DispatchStep::dispatch(const RequestPtr& r) {
  // At most two tiles a request, while new tiles come: what a dropped tile left behind goes within
  // a pass over the tiles the tracker holds, at a cost per request that does not grow with them.
  tracker_.sweep(2, [this](const RequestPtr& x) { return is_done(x); });
  switch (r->kind) {
    case Kind::wait:
      wait_preds(*r);
      log_debug("dispatch #{} {}: {} predecessor(s)", r->id, r->name, r->preds.size());
      engine_.arm_host_side(r);
      return;
    case Kind::release: {
      const auto tile = r->accesses.front().tile->id;
      tracker_.outstanding(
          tile, [this](const RequestPtr& x) { return is_done(x); }, r->preds);
      tracker_.forget(tile);
      track_untracked(r);  // the tracker forgot its tile: wait_all still waits for the release
      engine_.arm_host_side(r);
      return;
    }
    default:
      break;
  }
  track_hazards(r);
  log_debug("dispatch #{} {} '{}': {} predecessor(s)", r->id, to_string(r->kind), r->name, r->preds.size());
  if (!on_device(r->kind)) {
    engine_.arm_host_side(r);
    return;
  }
  hold_behind_host_preds(r);
}

void DispatchStep::wait_preds(Request& w) {
  auto done = [this](const RequestPtr& x) { return is_done(x); };
  WaitWork& what = w.wait();
  if (!what.on.empty()) {
    w.preds = std::move(what.on);
  } else if (what.tile) {
    tracker_.outstanding(what.tile->id, done, w.preds);
  } else {
    tracker_.outstanding_all(done, w.preds);
    std::erase_if(untracked_, done);
    w.preds.insert(w.preds.end(), untracked_.begin(), untracked_.end());
  }
}

void DispatchStep::track_hazards(const RequestPtr& r) {
  auto done = [this](const RequestPtr& x) { return is_done(x); };
  RequestList& preds = r->preds;
  edge_scratch_.clear();
  for (const auto& a : r->accesses) {
    AccessPlan plans[2];
    const int n = plan_accesses(r->kind, a, plans);
    const auto images = tracker_.images(a.tile->id);
    for (int i = 0; i < n; ++i)
      tracker_.access(images, a.tile->id, plans[i].image, a.box, plans[i].reads, plans[i].writes, r, plans[i].slot,
                      done, edge_scratch_);
  }
  if (r->accesses.empty()) track_untracked(r);
  preds.reserve(preds.size() + edge_scratch_.size());  // one allocation: a transfer has an edge per image
  for (const auto& e : edge_scratch_) {
    if (std::find(preds.begin(), preds.end(), e.from) == preds.end() && !(engine_.recording && is_done(e.from)))
      preds.push_back(e.from);
    // Only a RAW edge makes r depend on e.from, so that its failure cancels r (docs/architecture.md,
    // "Failures"). A WAW edge only orders r's overwrite after it, but r's write may hide a failed
    // write from the tracker (Request::failures_behind); a WAR edge only orders.
    if (e.hazard == Hazard::WAR) continue;
    const bool reads = e.hazard == Hazard::RAW;
    auto known = std::find_if(r->written_before.begin(), r->written_before.end(),
                              [&](const Request::WrittenBefore& w) { return w.id == e.from->id; });
    if (known == r->written_before.end())
      r->written_before.push_back({e.from->id, reads});
    else
      known->reads = known->reads || reads;
  }
  if (!engine_.recording) return;
  std::vector<EdgeRecord> edges;
  for (const auto& e : edge_scratch_) {
    const auto& tile = *std::find_if(r->accesses.begin(), r->accesses.end(), [&](const Access& a) {
                          return a.tile->id == e.tile;
                        })->tile;
    edges.push_back(EdgeRecord{e.from->id, r->id, to_string(e.hazard), tile.name, to_string(e.image), e.region,
                               tile.extent.dims, e.from_slot, e.to_slot});
  }
  std::lock_guard lock(r->m);  // records() may be reading it (the request is in the history already)
  r->edges = std::move(edges);
}

void DispatchStep::hold_behind_host_preds(const RequestPtr& r) {
  // Host → device edges hold the command back until the host predecessor has ended (it is then put
  // to the streaming node again, to be enqueued or, if it reads what a failed one wrote, cancelled); device →
  // device edges stay in `preds` for the streaming node, which turns them into wait-list events
  // when it enqueues. The +1 is the streaming node's to take, so no host predecessor can release
  // the command before the streaming node saw it.
  r->enqueue_unmet.store(1, std::memory_order_relaxed);
  if (std::all_of(r->preds.begin(), r->preds.end(), [](const RequestPtr& p) { return on_device(p->kind); })) return;
  RequestList ended_badly;  // cancel_if_dependent takes p.m itself
  std::erase_if(r->preds, [&](const RequestPtr& p) {
    if (on_device(p->kind)) return false;
    std::lock_guard lock(p->m);
    if (const Status s = p->status.load(std::memory_order_relaxed); s != Status::pending) {
      if (s != Status::done) ended_badly.push_back(p);
      return true;
    }
    r->enqueue_unmet.fetch_add(1, std::memory_order_relaxed);  // under p->m: p cannot finish meanwhile
    p->held.push_back(r);
    return true;
  });
  for (const auto& p : ended_badly) cancel_if_dependent(*r, *p, p->status.load(std::memory_order_acquire));
}

}  // namespace hetflow::detail
