#include "completion_poller.hpp"

namespace hetflow::detail {

namespace {
constexpr std::chrono::microseconds first_interval{100}, longest_interval{1000}, flush_delay{200};
constexpr std::chrono::milliseconds awake_after_flush{5};
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
  start_thread();
  cv_.notify_all();
}

void CompletionPoller::flush_soon() {
  if (flush_due_.exchange(true, std::memory_order_acq_rel)) return;  // one is due already
  std::lock_guard lock(m_);
  start_thread();
  if (idle_wait_) cv_.notify_all();  // else it ticks, and finds the flush due on its next tick
}

void CompletionPoller::start_thread() {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void CompletionPoller::release() {
  std::lock_guard lock(m_);
  --holders_;
}

void CompletionPoller::run() {
  std::unique_lock lock(m_);
  while (!stopping_) {
    const bool flushing = flush_due_.load(std::memory_order_acquire);
    if (holders_ == 0 && !flushing && std::chrono::steady_clock::now() >= awake_until_) {
      idle_wait_ = true;
      cv_.wait(lock, [this] { return stopping_ || holders_ > 0 || flush_due_.load(std::memory_order_acquire); });
      idle_wait_ = false;
      continue;
    }
    const bool checking = holders_ > 0;
    cv_.wait_for(
        lock,
        checking ? std::min<std::chrono::microseconds>(interval_, flushing ? flush_delay : interval_) : flush_delay,
        [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    const bool flushed = flush_due_.exchange(false, std::memory_order_acq_rel);
    if (flushed) flush_();
    const bool ended = checking && check_();
    lock.lock();
    if (flushed) awake_until_ = std::chrono::steady_clock::now() + awake_after_flush;
    if (checking) interval_ = ended ? first_interval : std::min(interval_ * 2, longest_interval);
  }
}

}  // namespace hetflow::detail
