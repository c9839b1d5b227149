#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <hetflow/box.hpp>
#include <hetflow/detail/cl_type.hpp>
#include <hetflow/errors.hpp>
#include <hetflow/opencl.hpp>

namespace hetflow {

class Controller;

namespace detail {

template <class T>
constexpr const char* cl_type_name();

// cl_platform.h's vector types (cl_float2, cl_int4, ...) are unions whose `s` member is their lanes:
// "float2", "int4" (cl_float3 is cl_float4's type, so it is named "float4").
template <class U>
concept ClVector = std::is_union_v<U> && requires(U u) {
  u.s[0];
};

template <ClVector U>
constexpr const char* cl_vector_name() {
  using Lane = std::remove_all_extents_t<decltype(U::s)>;
  constexpr std::size_t lanes = std::extent_v<decltype(U::s)>;
  constexpr const char* lane = cl_type_name<Lane>();
  constexpr const char* names[][5] = {
      {"char2", "char3", "char4", "char8", "char16"},      {"uchar2", "uchar3", "uchar4", "uchar8", "uchar16"},
      {"short2", "short3", "short4", "short8", "short16"}, {"ushort2", "ushort3", "ushort4", "ushort8", "ushort16"},
      {"int2", "int3", "int4", "int8", "int16"},           {"uint2", "uint3", "uint4", "uint8", "uint16"},
      {"long2", "long3", "long4", "long8", "long16"},      {"ulong2", "ulong3", "ulong4", "ulong8", "ulong16"},
      {"float2", "float3", "float4", "float8", "float16"}, {"double2", "double3", "double4", "double8", "double16"}};
  constexpr const char* lane_names[] = {"char", "uchar", "short", "ushort", "int",
                                        "uint", "long",  "ulong", "float",  "double"};
  constexpr int width = lanes == 2 ? 0 : lanes == 3 ? 1 : lanes == 4 ? 2 : lanes == 8 ? 3 : lanes == 16 ? 4 : -1;
  if (!lane || width < 0) return nullptr;
  for (std::size_t k = 0; k < 10; ++k)
    if (std::string_view(lane_names[k]) == lane) return names[k][width];
  return nullptr;
}

// The OpenCL C name of an element type, used to check a tile against a kernel's pointer argument.
template <class T>
constexpr const char* cl_type_name() {
  using U = std::remove_cv_t<T>;
  if constexpr (ClVector<U>)
    return cl_vector_name<U>();
  else if constexpr (std::is_same_v<U, float>)
    return "float";
  else if constexpr (std::is_same_v<U, double>)
    return "double";
  else if constexpr (std::is_same_v<U, std::int8_t> || std::is_same_v<U, char>)
    return "char";
  else if constexpr (std::is_same_v<U, std::uint8_t>)
    return "uchar";
  else if constexpr (std::is_same_v<U, std::int16_t>)
    return "short";
  else if constexpr (std::is_same_v<U, std::uint16_t>)
    return "ushort";
  else if constexpr (std::is_same_v<U, std::int32_t>)
    return "int";
  else if constexpr (std::is_same_v<U, std::uint32_t>)
    return "uint";
  else if constexpr (std::is_same_v<U, std::int64_t>)
    return "long";
  else if constexpr (std::is_same_v<U, std::uint64_t>)
    return "ulong";
  else
    return nullptr;
}

struct TileState;
// Whether the calling thread is running a host task (or hook) that declared an access to `tile`: the
// tile's release waits for it, so it may still use a freed tile's handle; any other code may not
// (graph_nodes/host_task_node.cpp).
bool running_host_task_on(const TileState& tile);

// What a Tile handle points to. Owned jointly by the user's handles and the requests in flight,
// so buffers outlive every command that uses them.
struct TileState {
  std::uint64_t id = 0;
  std::string name;
  Extent extent;
  std::size_t elem_size = 0;
  const char* elem_type = nullptr;
  ClType elem_parsed;  // elem_type taken apart once: launches check their tiles against their kernel
  bool device_only = false;
  // The engine that made it, by serial number: one made later at the same address (the controller
  // destroyed, another made) must not take the tile for its own.
  std::uint64_t owner = 0;
  void* host = nullptr;    // the pinned host image, mapped once
  cl::Buffer host_buffer;  // CL_MEM_ALLOC_HOST_PTR: what makes the host image pinned
  cl::Buffer device_buffer;
  cl::CommandQueue unmap_queue;
  // Set on a tile another controller made for a loop over several devices (src/device_view.hpp):
  // `host` is this tile's host image, kept alive here; the tile has a device image of its own.
  std::shared_ptr<TileState> host_of;
  std::atomic<bool> freed{false};  // free() was called: no new request may use it
  // Where the latest contents are, as the flow-graph nodes (hetflow/flow.hpp) track it to add transfers:
  // 1 host image, 2 device image, 3 both. Requests submitted through the Controller do not change it.
  std::atomic<std::uint8_t> latest{1};
  // Requests on it submitted from inside a host task or hook of its controller: a wait(t) that
  // saw this change while it waited waits again, for what those submitted (Engine::wait_tile).
  std::atomic<std::uint64_t> nested_submits{0};

  std::size_t bytes() const { return extent.count() * elem_size; }
  // Enqueues the unmapping of the host image (not waited for: OpenCL keeps the buffer alive until
  // its commands end) and forgets it; returns clEnqueueUnmapMemObject's result (CL_SUCCESS when
  // there was nothing to unmap). src/request.cpp.
  cl_int unmap_host_image();
  ~TileState();
};

}  // namespace detail

template <class T>
class TileRegion;

// A typed dense array of 1 to 3 dimensions with a pinned host image and a device image (or only a
// device image). Made by Controller::tile / Controller::device_tile. Copies share the same tile.
// Thread safety: a handle may be copied and its metadata (name, extent, size) read from any thread.
// The host image (data, host, [], at) has no lock: use it where the controller's ordering says it
// is yours — after wait(t), or inside a host task or hook that declared the access.
template <class T>
class Tile {
  static_assert(std::is_trivially_copyable_v<T>, "tile elements must be trivially copyable");

 public:
  Tile() = default;
  const std::string& name() const { return state().name; }
  const Extent& extent() const { return state().extent; }
  std::size_t size() const { return state().extent.count(); }
  int dims() const { return state().extent.dims; }
  bool device_only() const { return state().device_only; }

  // The host image. Read or write it only after wait(tile), or inside a host task that declared
  // the access.
  T* data() const {
    const auto& s = state();
    if (s.device_only) throw UsageError("tile '" + s.name + "' is device-only: it has no host image");
    if (!s.host) throw UsageError("tile '" + s.name + "' used after free");  // released already
    return static_cast<T*>(s.host);
  }
  std::span<T> host() const { return {data(), size()}; }
  T& operator[](std::size_t i) const { return data()[i]; }
  T& at(std::size_t x, std::size_t y = 0, std::size_t z = 0) const {
    const auto& e = state().extent;
    return data()[x + e.x * (y + e.y * z)];
  }

  TileRegion<T> region(const Box& box) const;
  // Rows [first, first+count) of a 2-D tile (of every plane, of a 3-D one). UsageError for a 1-D
  // tile, which has one row: its parts are region(Box{{first, 0, 0}, {count, 1, 1}}).
  TileRegion<T> rows(std::size_t first, std::size_t count) const;

  const std::shared_ptr<detail::TileState>& shared_state() const { return state_; }
  explicit operator bool() const { return state_ != nullptr; }

 private:
  friend class Controller;
  explicit Tile(std::shared_ptr<detail::TileState> s) : state_(std::move(s)) {}
  const detail::TileState& state() const {
    if (!state_) throw UsageError("use of an empty Tile handle (made by Tile<T>() and never assigned)");
    // Host tasks that declared the tile before free() run before it is released and may still use it.
    if (state_->freed.load(std::memory_order_relaxed) && !detail::running_host_task_on(*state_))
      throw UsageError("tile '" + state_->name + "' used after free");
    return *state_;
  }
  std::shared_ptr<detail::TileState> state_;
};

// A box of a tile, usable wherever a tile is: move_to(t.region(b)), in(t.rows(0, 64)), ...
template <class T>
class TileRegion {
 public:
  TileRegion(Tile<T> t, const Box& b) : tile_(std::move(t)), box_(b) {}
  const Tile<T>& tile() const { return tile_; }
  const Box& box() const { return box_; }

 private:
  Tile<T> tile_;
  Box box_;
};

template <class T>
TileRegion<T> Tile<T>::region(const Box& box) const {
  return TileRegion<T>(*this, box);
}
template <class T>
TileRegion<T> Tile<T>::rows(std::size_t first, std::size_t count) const {
  const auto& e = extent();
  if (dims() == 1)
    throw UsageError("tile '" + name() + "' is 1-D: rows(" + std::to_string(first) + ", " + std::to_string(count) +
                     ") is for a 2-D or 3-D tile; a part of a 1-D one is region(Box{{" + std::to_string(first) +
                     ", 0, 0}, {" + std::to_string(count) + ", 1, 1}})");
  return TileRegion<T>(*this, Box{{0, first, 0}, {e.x, count, e.z}});
}

}  // namespace hetflow
