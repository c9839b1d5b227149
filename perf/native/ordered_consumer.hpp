// Consumes a stream's items in order on a thread of its own, as a hand-written pipeline does when
// its host-side consumption must not hold back the thread that produces and enqueues: the native
// Sobel runs its result sums this way so that, like hetflow's host tasks, they overlap the
// generation of later frames.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace hetflow::native {

class OrderedConsumer {
 public:
  // consume(k) runs for k = 0 .. count-1, in order, each once ready(k) has been called.
  OrderedConsumer(std::size_t count, std::function<void(std::size_t)> consume);
  OrderedConsumer(const OrderedConsumer&) = delete;
  OrderedConsumer& operator=(const OrderedConsumer&) = delete;
  // Stops after the item in progress and joins (what was not consumed is dropped): for unwinding.
  ~OrderedConsumer();

  void ready(std::size_t k);  // item k may be consumed; items become ready in order
  // Blocks until item k has been consumed (its buffer may be reused); rethrows what consume threw.
  void wait_consumed(std::size_t k);
  // Blocks until every item has been consumed and joins; rethrows what consume threw.
  void finish();

 private:
  void run();
  void rethrow_locked();

  std::size_t count_;
  std::function<void(std::size_t)> consume_;
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t ready_ = 0, consumed_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace hetflow::native
