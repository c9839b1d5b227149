// The part of hetflow::flow::loop_node (include/hetflow/flow.hpp) that does not depend on the message
// type: one heterogeneous loop (src/hetero_loop.hpp) and the loops waiting their turn.
#include <hetflow/flow.hpp>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include "engine.hpp"
#include "hetero_loop.hpp"

namespace hetflow::flow::detail {

LoopCore::LoopCore(Controller& c, std::string name, LoopOptions loop, NodeOptions options)
    : c_(c), node_(std::make_shared<NodeCore>(c, std::move(name), "loop_node", std::move(options))) {
  loop_ = std::make_unique<hetflow::detail::LoopState>(c, std::move(loop), node_->id());
}

LoopCore::~LoopCore() = default;

void LoopCore::prepare(const Loop& l, Message& m) {
  hetflow::detail::LoopState::check(l.body);
  std::vector<Access> roles = l.body.reads;
  roles.insert(roles.end(), l.body.constants.begin(), l.body.constants.end());
  if (l.n > 0)
    for (auto& w : l.body.writes(Chunk{0, l.n})) roles.push_back(std::move(w));
  node_->prepare_host(roles, m);
}

void LoopCore::enqueue(Loop l, std::function<void(LoopEnd)> done) {
  {
    std::lock_guard lock(m_);
    if (busy_) {
      waiting_.emplace_back(std::move(l), std::move(done));
      return;
    }
    busy_ = true;
  }
  start(std::move(l), std::move(done));
}

void LoopCore::start(Loop l, std::function<void(LoopEnd)> done) {
  loop_->set_body(std::move(l.body));
  auto self = shared_from_this();
  auto finished = [self, done = std::move(done)](LoopEnd end) {
    {
      std::lock_guard lock(self->m_);
      self->last_ = end.report;
    }
    done(std::move(end));
    std::unique_lock lock(self->m_);
    if (self->waiting_.empty()) {
      self->busy_ = false;
      return;
    }
    auto next = std::move(self->waiting_.front());
    self->waiting_.pop_front();
    lock.unlock();
    self->start(std::move(next.first), std::move(next.second));
  };
  // The last chunk ended from inside its own request (a hook), which is marked done or failed only
  // once that returns: one more hook on every tile the loop used runs after all of them, when their
  // failures can be taken by the message.
  auto on_end = [self, finished](hetflow::detail::LoopState::Ended e) {
    std::vector<Access> roles;
    for (const auto& t : e.tiles) {
      Access a{t, Box::whole(t->extent), Role::in};
      roles.push_back(t->device_only ? device_image(a) : a);
    }
    auto end = std::make_shared<LoopEnd>(LoopEnd{std::move(e.report), std::move(e.failure), std::move(e.tiles), {}});
    self->node_->hook([finished, end](const Outcome&) { finished(std::move(*end)); }, std::move(roles), ": ended");
  };
  try {
    hetflow::detail::ControllerLife::Use use(node_->life());
    if (!use) node_->controller_gone();
    auto& engine = hetflow::detail::engine_of(c_);
    if (engine.policy != Policy::sync) {
      loop_->start(l.n, std::move(on_end));
      return;
    }
    // Every transfer blocks under sync: the loop runs here, this thread the device's token (as a
    // HeteroLoop's calls do), and waits for its chunks' requests, taking their failures. Its CPU
    // chunks need a thread besides this one: with oneTBB limited to one, the graph hung.
    if (tbb::this_task_arena::max_concurrency() < 2 ||
        tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism) < 2)
      throw UsageError(
          "under the sync policy a loop_node runs its loop inside the node's body and needs a second TBB thread "
          "for its CPU chunks; this arena has one (tbb::global_control max_allowed_parallelism = 1?): use the "
          "async policy");
    auto e = loop_->run_to_end(l.n);
    LoopEnd end{std::move(e.report), std::move(e.failure), std::move(e.tiles), {}};
    for (const auto& t : end.tiles) try {
        engine.wait_tile(t);
      } catch (const RequestFailed& failed) {
        end.failures.insert(end.failures.end(), failed.failures().begin(), failed.failures().end());
      } catch (const DeviceLost& lost) {  // the wait that found the controller lost: its failures are the message's
        end.failures.insert(end.failures.end(), lost.failures().begin(), lost.failures().end());
        if (end.failure.empty()) end.failure = lost.reason();
      }
    finished(std::move(end));
  } catch (const std::exception& e) {  // refused before any chunk ran (DeviceLost, say)
    finished(LoopEnd{{}, std::string("was refused: ") + e.what(), {}, {}});
  }
}

LoopReport LoopCore::last_report() const {
  std::lock_guard lock(m_);
  return last_;
}

}  // namespace hetflow::flow::detail
