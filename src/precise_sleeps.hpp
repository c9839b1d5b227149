#pragma once
// While one lives, the calling thread's timed sleeps end when asked, not up to 50 us later.
// Linux lets a sleeping thread's wake-up slip by its timer slack, 50 us by default, so to save
// wake-ups: a look at a command every 20 us became one every ~70. A loop call's calling thread,
// which watches its last chunks with sleeps of 20 us and up, asks for 1 us instead; the slack it had
// comes back when the scope ends. Elsewhere than Linux it does nothing.
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace hetflow::detail {

class PreciseSleeps {
 public:
  PreciseSleeps() {
#ifdef __linux__
    before_ = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (before_ > 0) prctl(PR_SET_TIMERSLACK, kSlackNs, 0, 0, 0);
#endif
  }
  ~PreciseSleeps() {
#ifdef __linux__
    if (before_ > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(before_), 0, 0, 0);
#endif
  }
  PreciseSleeps(const PreciseSleeps&) = delete;
  PreciseSleeps& operator=(const PreciseSleeps&) = delete;

 private:
  static constexpr unsigned long kSlackNs = 1000;
  long before_ = -1;
};

}  // namespace hetflow::detail
