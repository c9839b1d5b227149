#include "deferred_teardown.hpp"

#include <hetflow/controller.hpp>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "engine.hpp"
#include "log.hpp"

namespace hetflow::detail {
namespace {

// Made on first use, so destroyed at exit before what was made earlier (oneTBB's and OpenCL's
// state, which the ending engines still use): its destructor joins them.
class Teardowns {
 public:
  void start(std::unique_ptr<Engine> engine) {
    std::lock_guard lock(m_);
    // Those that ended are joined now, so a program that does this often does not pile them up.
    std::erase_if(running_, [](Running& r) {
      if (!r.ended->load(std::memory_order_acquire)) return false;
      r.thread.join();
      return true;
    });
    auto ended = std::make_shared<std::atomic<bool>>(false);
    running_.push_back({std::thread([e = std::move(engine), ended]() mutable {
                          ControllerAccess::end(std::move(e));
                          ended->store(true, std::memory_order_release);
                        }),
                        ended});
  }
  ~Teardowns() {
    std::lock_guard lock(m_);
    for (auto& r : running_) r.thread.join();
  }

 private:
  struct Running {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> ended;
  };
  std::mutex m_;
  std::vector<Running> running_;
};

}  // namespace

void end_controller_elsewhere(std::unique_ptr<Engine> engine) {
  static Teardowns teardowns;
  log().info(
      "controller destroyed inside its own host task or hook: it ends on a thread of its own once that task returns");
  teardowns.start(std::move(engine));
}

}  // namespace hetflow::detail

namespace hetflow::detail {

void ControllerAccess::end(std::unique_ptr<Engine> engine) {
  Controller c(std::move(engine));  // its destructor, on this thread, does the rest
}

}  // namespace hetflow::detail
