// Files a command must not leave behind when SIGINT or SIGTERM ends it: a temporary file, or an
// output that would otherwise stay cut off mid-frame. The process still ends by that signal.
#pragma once
#include <string>

namespace hetflow::cli {

// While it lives, SIGINT or SIGTERM removes `path` before ending the process (a signal ignored
// when the process started, as in a shell's background job, stays ignored: it ends nothing).
// Beyond 8 at once, or for a path longer than PATH_MAX, nothing is removed.
class RemovedOnSignal {
 public:
  explicit RemovedOnSignal(const std::string& path);
  ~RemovedOnSignal();
  RemovedOnSignal(const RemovedOnSignal&) = delete;
  RemovedOnSignal& operator=(const RemovedOnSignal&) = delete;

 private:
  int slot_;  // -1: none was free
};

}  // namespace hetflow::cli
