#pragma once
// Whether a controller still takes requests from the flow-graph nodes that hold it
// (include/hetflow/flow.hpp). A program may destroy a controller while its own graph still holds
// messages for the controller's nodes: the destructor closes this first, then waits for the node steps
// already inside to leave, so no node submits to a controller being torn down; the steps after it
// fail their message, naming why, and the graph drains.
#include <condition_variable>
#include <mutex>

namespace hetflow::detail {

class ControllerLife {
 public:
  // A node step's use of the controller: while one exists the controller is not torn down. Steps
  // nest (under sync a blocked transfer runs other nodes' steps on the same thread), so it counts.
  class Use {
   public:
    explicit Use(ControllerLife& life) : life_(life), entered_(life.enter()) {}
    ~Use() {
      if (entered_) life_.leave();
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    explicit operator bool() const { return entered_; }  // false: the controller is gone

   private:
    ControllerLife& life_;
    bool entered_;
  };

  // From the controller's destructor, before it waits for its requests.
  void close() {
    std::unique_lock lock(m_);
    open_ = false;
    left_.wait(lock, [this] { return inside_ == 0; });
  }

 private:
  bool enter() {
    std::lock_guard lock(m_);
    if (!open_) return false;
    ++inside_;
    return true;
  }
  void leave() {
    std::lock_guard lock(m_);
    if (--inside_ == 0 && !open_) left_.notify_all();
  }

  std::mutex m_;
  std::condition_variable left_;
  bool open_ = true;
  int inside_ = 0;
};

}  // namespace hetflow::detail
