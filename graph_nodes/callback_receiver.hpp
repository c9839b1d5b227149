#pragma once
// The receiver node (docs/architecture.md, "The flow of a request"): where a device command's end
// becomes its request's outcome. Ends arrive many ways — a completion callback (through the
// streaming node's gateway), the completion poller, a waiting thread blocked on or looking at an
// event, the streaming step settling what nobody waits for — and every one comes here, so a
// command's predecessors are settled before it and its failure cancels exactly its dependants. It
// owns the commands watched for a host-side consumer, the hub the completion callbacks reach it
// through (a callback that fires after the engine is gone finds nothing), and whether callbacks are
// still worth registering (src/callback_worth.hpp). Any thread may call it.
#include <memory>
#include <mutex>

#include "callback_worth.hpp"
#include "request.hpp"

namespace hetflow::detail {

class Engine;

class ReceiverStep {
 public:
  explicit ReceiverStep(Engine& engine);

  // The command `device_request` has a host-side consumer: its end must be noticed. Registers its
  // completion callback while callbacks are worth it (once per command), and flushes its queue.
  void watch(const RequestPtr& device_request);
  // Checks the watched commands' status and completes those that ended. Non-blocking: run by
  // waiting threads, the completion poller and after each host task, because some runtimes
  // (NVIDIA's) deliver completion callbacks milliseconds late. Whether a command was seen to end.
  bool poll_watched();
  // The watched commands of `lane` not ended yet: what a failed flush strands.
  RequestList watched_on(unsigned lane);
  // Callbacks that fire from now on reach nothing (the engine is going).
  void detach();
  // HETFLOW_DEBUG_DROP_CALLBACKS: behave as a runtime whose completion callbacks never arrive.
  void drop_callbacks() { drop_callbacks_ = true; }

  // r's command has ended (a callback or a poll said so): its outcome, from its own status.
  void on_device_complete(const RequestPtr& r);
  // Settles r, and what it waited on, as done if its command completed without error; false
  // otherwise (still running or failed): then r is left to its usual observers.
  bool settle_if_succeeded(const RequestPtr& r);
  // The same without asking the driver, for a command ahead of one that ended well on an in-order
  // queue (StreamingStep::settle_ended): a runtime ends what follows a failed command on such a queue
  // with an error (PoCL) or loses the context (NVIDIA), so this one ended well too.
  bool settle_as_ended_well(const RequestPtr& r);
  void finish_device(Request& r, cl_int status);  // an ended command's outcome, from its status
  // First the outcomes of what r waited on: asked of the driver, or all done if r ended well.
  // Returns whether some had not ended; if all had, `failed` gets those that failed or were cancelled.
  bool settle_running_preds(Request& r, bool ended_well, RequestList& failed);
  void finish_outcome(Request& r, cl_int status);  // r's own, once they are settled
  // An enqueued command r whose predecessors `failed_preds` (not empty) failed or were cancelled:
  // cancelled, keeping every failure behind them (cancel_because).
  void cancel_after(Request& r, const RequestList& failed_preds);
  // r's callback came (callback_first) or r was seen ended another way: counted once, for
  // CallbackWorth. Returns whether this call did the counting.
  bool judge_callback(Request& r, bool callback_first);

 private:
  // What a registered callback holds: the hub, not the receiver, which may be gone when it fires.
  struct Hub {
    std::mutex m;
    ReceiverStep* receiver = nullptr;
  };
  struct Token {
    std::shared_ptr<Hub> hub;
    RequestPtr request;
  };
  static void CL_CALLBACK on_event(cl_event, cl_int, void* token);
  void deliver(const RequestPtr& r);  // from a callback: to the receiver node through the gateway

  Engine& engine_;
  std::mutex watched_mutex_;
  RequestList watched_;  // device requests with a host-side consumer, not yet seen complete
  std::shared_ptr<Hub> hub_ = std::make_shared<Hub>();
  bool drop_callbacks_ = false;
  CallbackWorth callbacks_;  // whether watch() still registers callbacks
};

}  // namespace hetflow::detail
