#include "native/ordered_consumer.hpp"

#include <utility>

namespace hetflow::native {

OrderedConsumer::OrderedConsumer(std::size_t count, std::function<void(std::size_t)> consume)
    : count_(count), consume_(std::move(consume)), thread_([this] { run(); }) {}

OrderedConsumer::~OrderedConsumer() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OrderedConsumer::run() {
  for (std::size_t k = 0; k < count_; ++k) {
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return ready_ > k || stop_; });
      if (stop_) return;
    }
    try {
      consume_(k);
    } catch (...) {
      std::lock_guard lock(m_);
      error_ = std::current_exception();
      stop_ = true;
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard lock(m_);
      consumed_ = k + 1;
    }
    cv_.notify_all();
  }
}

void OrderedConsumer::rethrow_locked() {
  if (error_) std::rethrow_exception(error_);
}

void OrderedConsumer::ready(std::size_t k) {
  {
    std::lock_guard lock(m_);
    ready_ = k + 1;
  }
  cv_.notify_all();
}

void OrderedConsumer::wait_consumed(std::size_t k) {
  std::unique_lock lock(m_);
  cv_.wait(lock, [&] { return consumed_ > k || error_ || stop_; });
  rethrow_locked();
}

void OrderedConsumer::finish() {
  if (count_ > 0) wait_consumed(count_ - 1);
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(m_);
  rethrow_locked();
}

}  // namespace hetflow::native
