#include "completion_poller.hpp"

namespace hetflow::detail {

CompletionPoller::~CompletionPoller() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CompletionPoller::hold() {
  std::lock_guard lock(m_);
  ++holders_;
  interval_ = first_;  // a new command to watch: look early
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  cv_.notify_all();
}

void CompletionPoller::release() {
  std::lock_guard lock(m_);
  --holders_;
}

void CompletionPoller::expect(std::chrono::steady_clock::time_point at) {
  std::lock_guard lock(m_);
  if (at < expected_) expected_ = at;
  hinted_ = true;
  cv_.notify_all();
}

void CompletionPoller::run() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(m_);
  while (!stopping_) {
    if (holders_ == 0) {
      expected_ = Clock::time_point::max();  // nothing waits: a hint of what did has no use now
      cv_.wait(lock, [this] { return stopping_ || holders_ > 0; });
      continue;
    }
    if (const Clock::time_point now = Clock::now(); expected_ > now) {
      hinted_ = false;
      // An earlier hint that comes while it sleeps wakes it to sleep again until that one.
      if (cv_.wait_until(lock, std::min(now + interval_, expected_), [this] { return stopping_ || hinted_; })) {
        if (stopping_) break;
        continue;
      }
    }
    if (Clock::now() >= expected_) expected_ = Clock::time_point::max(), interval_ = first_ / 2;
    lock.unlock();
    const bool ended = check_();
    lock.lock();
    interval_ = ended ? first_ : std::min(interval_ * 2, longest_);
  }
}

}  // namespace hetflow::detail
