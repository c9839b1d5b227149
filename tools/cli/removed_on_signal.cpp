#include "removed_on_signal.hpp"

#include <climits>
#include <csignal>
#include <cstring>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>

namespace hetflow::cli {
namespace {

// The handler may only read what is ready: a slot's path is written while the slot is claimed and
// is read once it is armed. Lock-free atomics and unlink are safe in a signal handler; a mutex or
// a std::string is not.
enum : int { kFree, kClaimed, kArmed };
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot slots[8];
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void remove_and_end(int sig) {
  for (auto& s : slots)
    if (s.state.load() == kArmed) ::unlink(s.path);
  // The default action, so the parent sees the process ended by this signal (status 128 + sig).
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_handler = remove_and_end;
      sigemptyset(&action.sa_mask);
      ::sigaction(sig, &action, nullptr);
    }
  });
}

}  // namespace

RemovedOnSignal::RemovedOnSignal(const std::string& path) : slot_(-1) {
  install_once();
  std::error_code ec;
  // Absolute, so that it names the same file whatever the working directory is when the signal comes.
  const std::string absolute = std::filesystem::absolute(path, ec).string();
  if (ec || absolute.size() >= PATH_MAX) return;
  for (int i = 0; i < int(std::size(slots)); ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kClaimed)) continue;
    std::memcpy(slots[i].path, absolute.c_str(), absolute.size() + 1);
    slots[i].state.store(kArmed);
    slot_ = i;
    return;
  }
}

RemovedOnSignal::~RemovedOnSignal() {
  if (slot_ >= 0) slots[slot_].state.store(kFree);
}

}  // namespace hetflow::cli
