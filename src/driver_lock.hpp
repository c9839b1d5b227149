#pragma once
// Oclgrind runs a queue's commands in whichever thread flushes, finishes or waits on it, and its
// runtime is not safe to enter from two threads at once (an assertion in
// oclgrind::Context::notifyKernelBegin aborted `hetflow run sobel` on it, 1 run in 2). On such a
// device every engine call that enqueues, flushes, finishes or waits holds one process-wide lock;
// on every other device driver_lock() takes nothing.
#include <mutex>

namespace hetflow::detail {

// From now on, in this process (a controller on Oclgrind was made).
void serialize_driver_calls();
// Held while calling the driver where it may run commands; not engaged unless serializing.
std::unique_lock<std::recursive_mutex> driver_lock();

}  // namespace hetflow::detail
