#include "completion_poller.hpp"

namespace hetflow::detail {

namespace {
constexpr std::chrono::microseconds first_interval{100}, longest_interval{1000};
}

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
  interval_ = first_interval;  // a new command to watch: look early
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  cv_.notify_all();
}

void CompletionPoller::release() {
  std::lock_guard lock(m_);
  --holders_;
}

void CompletionPoller::run() {
  std::unique_lock lock(m_);
  while (!stopping_) {
    if (holders_ == 0) {
      cv_.wait(lock, [this] { return stopping_ || holders_ > 0; });
      continue;
    }
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    const bool ended = check_();
    lock.lock();
    interval_ = ended ? first_interval : std::min(interval_ * 2, longest_interval);
  }
}

}  // namespace hetflow::detail
