#include "completion_poller.hpp"

namespace hetflow::detail {

namespace {
constexpr std::chrono::microseconds first_interval{100}, longest_interval{1000};
// As the streaming node's FlushPolicy max age: a put-off flush is paid within about that.
constexpr std::chrono::microseconds flush_interval{50};
}  // namespace

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

void CompletionPoller::flush_soon() {
  std::lock_guard lock(m_);
  ++flush_requests_;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  cv_.notify_all();
}

void CompletionPoller::run() {
  std::unique_lock lock(m_);
  unsigned flush_requests_seen = 0;
  bool flushing = false;  // calling flush_ every flush_interval
  while (!stopping_) {
    if (flush_requests_ != flush_requests_seen) {
      flush_requests_seen = flush_requests_;
      flushing = true;
    }
    if (holders_ == 0 && !flushing) {
      cv_.wait(lock, [&] { return stopping_ || holders_ > 0 || flush_requests_ != flush_requests_seen; });
      continue;
    }
    cv_.wait_for(lock, flushing ? std::min(interval_, flush_interval) : interval_, [this] { return stopping_; });
    if (stopping_) break;
    const bool polling = holders_ > 0;
    lock.unlock();
    const bool flush_again = flushing && flush_();
    const bool ended = polling && check_();
    lock.lock();
    // A request made while flush_ ran is seen at the top of the loop: flushing goes on.
    if (!flush_again) flushing = false;
    if (polling) interval_ = ended ? first_interval : std::min(interval_ * 2, longest_interval);
  }
}

}  // namespace hetflow::detail
