#pragma once
// A type-erased callable that may be move-only (a lambda owning a std::unique_ptr): what a host
// task's function and an on_ready hook are kept in, both run once. std::function needs copyable
// callables, and std::move_only_function is C++23, beyond g++ 12's -std=c++20.
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace hetflow::detail {

template <class Signature>
class UniqueFunction;

template <class R, class... Args>
class UniqueFunction<R(Args...)> {
 public:
  UniqueFunction() = default;
  UniqueFunction(std::nullptr_t) {}  // NOLINT(google-explicit-constructor)
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, UniqueFunction> &&
             std::is_invocable_r_v<R, std::decay_t<F>&, Args...>)
  UniqueFunction(F&& f)  // NOLINT(google-explicit-constructor): converts as std::function does
      : callable_(std::make_unique<Holder<std::decay_t<F>>>(std::forward<F>(f))) {}
  UniqueFunction(UniqueFunction&&) noexcept = default;
  UniqueFunction& operator=(UniqueFunction&&) noexcept = default;

  explicit operator bool() const { return callable_ != nullptr; }
  R operator()(Args... args) { return callable_->call(std::forward<Args>(args)...); }

 private:
  struct Callable {
    virtual ~Callable() = default;
    virtual R call(Args... args) = 0;
  };
  template <class F>
  struct Holder final : Callable {
    template <class G>
    explicit Holder(G&& g) : f(std::forward<G>(g)) {}
    R call(Args... args) override { return static_cast<R>(f(std::forward<Args>(args)...)); }
    F f;
  };
  std::unique_ptr<Callable> callable_;
};

}  // namespace hetflow::detail
