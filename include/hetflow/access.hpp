#pragma once
// How a request declares what it does to a tile: in(t) reads it, out(t) writes it, io(t) both.
// The hazards follow what is declared, not what a kernel does: a kernel writing a tile passed as
// in(t) races with the requests around it. A launch refuses out() and io() for a const or
// __constant pointer (KernelArgInfo::read_only); declaring inputs const lets it check them.
// Dependencies are inferred from these declarations, never written by hand.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>

#include <hetflow/tile.hpp>

namespace hetflow {

enum class Role : std::uint8_t { in, out, io };

inline const char* to_string(Role r) { return r == Role::in ? "in" : r == Role::out ? "out" : "io"; }

struct Access {
  std::shared_ptr<detail::TileState> tile;
  Box box;
  Role role;
  // Which image a completion hook waits for (Controller::on_ready): false, the host image, as a host
  // task; true, the device image (device_image(in(t))). Every other request ignores it: transfers,
  // kernels and host tasks say by their kind which images they touch.
  bool device_image = false;
  bool reads() const { return role != Role::out; }
  bool writes() const { return role != Role::in; }
};

namespace detail {
template <class T>
Access make_access(const Tile<T>& t, Role r) {
  return Access{t.shared_state(), Box::whole(t.extent()), r};
}
template <class T>
Access make_access(const TileRegion<T>& t, Role r) {
  (void)t.tile().extent();  // rejects an empty or freed tile here, at the call
  return Access{t.tile().shared_state(), t.box(), r};
}
}  // namespace detail

template <class X>
Access in(const X& t) {
  return detail::make_access(t, Role::in);
}
template <class X>
Access out(const X& t) {
  return detail::make_access(t, Role::out);
}
template <class X>
Access io(const X& t) {
  return detail::make_access(t, Role::io);
}

// For Controller::on_ready only: wait for the commands that write the device image of `a`'s tile
// (a kernel's completion), with no transfer to the host. Only in() roles: a hook writes nothing there.
inline Access device_image(Access a) {
  if (a.role != Role::in) throw UsageError("device_image() takes in(t): a completion hook only waits to read");
  a.device_image = true;
  return a;
}

// A __local kernel argument of `count` elements of T (checked against the device's local memory
// at launch).
struct LocalMemory {
  std::size_t bytes;
};
template <class T>
LocalMemory local_mem(std::size_t count) {
  if (count == 0) throw UsageError("local_mem of 0 elements: OpenCL has no empty __local argument");
  if (count > SIZE_MAX / sizeof(T))
    throw UsageError("local_mem of " + std::to_string(count) + " elements of " + std::to_string(sizeof(T)) +
                     " bytes overflows a size_t");
  return LocalMemory{count * sizeof(T)};
}

namespace detail {

struct ScalarArg {
  std::array<std::byte, 64> bytes{};
  std::size_t size = 0;
  const char* type = nullptr;  // OpenCL C name when known
  ClType parsed;               // `type` taken apart, at compile time
};

using KernelArg = std::variant<Access, ScalarArg, LocalMemory>;

template <class A>
KernelArg to_kernel_arg(A&& a) {
  using U = std::remove_cvref_t<A>;
  if constexpr (std::is_same_v<U, Access> || std::is_same_v<U, LocalMemory>) {
    return KernelArg(std::forward<A>(a));
  } else {
    static_assert(!std::is_same_v<U, TileRegion<float>>, "pass tile regions to launch() as in(r), out(r) or io(r)");
    static_assert(std::is_trivially_copyable_v<U> && sizeof(U) <= 64,
                  "a kernel argument is in(t)/out(t)/io(t), local_mem<T>(n) or a scalar passed by value "
                  "(a tile must be wrapped in in(), out() or io())");
    ScalarArg s;
    std::memcpy(s.bytes.data(), &a, sizeof(U));
    s.size = sizeof(U);
    s.type = cl_type_name<U>();
    constexpr ClType parsed = parse_cl_type(cl_type_name<U>());
    s.parsed = parsed;
    return KernelArg(s);
  }
}

}  // namespace detail
}  // namespace hetflow
