#pragma once
// A list that keeps its first N elements inline and all of them in a vector once there are more.
// A request keeps several short lists (its tiles' accesses, the predecessors it writes after, the
// commands waiting on its event); nearly every one holds one to three elements, and an allocation
// for each cost more than what is done with the list (callgrind, perf/RESULTS.md 2026-11-28 and
// 2026-11-29).
#include <array>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace hetflow::detail {

template <class T, std::size_t N, class Allocator = std::allocator<T>>
class FewFirstList {
 public:
  FewFirstList() = default;
  FewFirstList(const FewFirstList&) = default;
  FewFirstList& operator=(const FewFirstList&) = default;
  // Moved from, a list is empty (the defaults would leave its inline elements counted, moved from).
  FewFirstList(FewFirstList&& o) noexcept { swap(o); }
  FewFirstList& operator=(FewFirstList&& o) noexcept {
    FewFirstList taken;
    taken.swap(o);
    swap(taken);
    return *this;
  }
  ~FewFirstList() = default;

  template <class It>
  void assign(It first, It last) {
    *this = FewFirstList();
    for (; first != last; ++first) push_back(*first);
  }
  void push_back(T x) {
    if (more_.empty() && n_ < N) {
      few_[n_++] = std::move(x);
      return;
    }
    if (more_.empty()) {
      more_.reserve(2 * N);
      for (std::size_t i = 0; i < n_; ++i) more_.push_back(std::exchange(few_[i], T{}));  // none left behind
    }
    more_.push_back(std::move(x));
  }
  T* begin() { return more_.empty() ? few_.data() : more_.data(); }
  T* end() { return more_.empty() ? few_.data() + n_ : more_.data() + more_.size(); }
  const T* begin() const { return more_.empty() ? few_.data() : more_.data(); }
  const T* end() const { return more_.empty() ? few_.data() + n_ : more_.data() + more_.size(); }
  T& front() { return *begin(); }
  const T& front() const { return *begin(); }
  std::size_t size() const { return more_.empty() ? n_ : more_.size(); }
  bool empty() const { return size() == 0; }
  void swap(FewFirstList& o) noexcept {
    std::swap(few_, o.few_);
    std::swap(n_, o.n_);
    more_.swap(o.more_);
  }

 private:
  std::array<T, N> few_{};
  std::size_t n_ = 0;  // how many of few_ are used (while more_ is empty)
  std::vector<T, Allocator> more_;
};

}  // namespace hetflow::detail
