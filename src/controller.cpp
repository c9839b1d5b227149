// The Controller: checks each request where it is submitted (misuse is a UsageError from the
// submitting call, before anything runs) and hands it to the engine.
#include <hetflow/controller.hpp>

#include <hetflow/dump.hpp>

#include <climits>
#include <concepts>
#include <map>
#include <string_view>

#include "cl_call.hpp"
#include "device_view.hpp"
#include "driver_lock.hpp"
#include "deferred_teardown.hpp"
#include "engine.hpp"
#include "region_text.hpp"

namespace hetflow {
namespace {

using detail::HookWork;
using detail::HostWork;
using detail::KernelWork;
using detail::Kind;
using detail::make_request;
using detail::TransferWork;

using detail::ClType;

// Bytes a value of the type occupies (a 3-vector occupies 4 lanes); 0 when not a built-in type.
std::size_t byte_size(const ClType& t) { return t.bytes * (t.lanes == 3 ? 4 : t.lanes); }

// Both types known and of another kind or width: `given`, for the message; else null. Bytes of the
// same size but another kind (an int where a float is read) would pass the size check and give
// garbage. With `signedness`, integers of the other signedness too: a tile's elements are read as
// they are (-1 as 4294967295). A scalar's signedness alone is let through: it is converted, as C
// would, and keeps its value wherever it fits both.
const char* kind_mismatch(const ClType& w, const ClType& g, const char* given, bool signedness = false) {
  if (!given) return nullptr;
  if (!w.kind || !g.kind) return nullptr;
  // cl_platform.h's 3-vectors are its 4-vectors (cl_float3 is cl_float4): a float3 takes either.
  const bool same_lanes = w.lanes == g.lanes || (w.lanes == 3 && g.lanes == 4);
  if (w.kind == g.kind && same_lanes && (!signedness || w.is_unsigned == g.is_unsigned)) return nullptr;
  // cl_half is cl_ushort in C++ (cl_platform.h): a half's bits come as ushort, read with vload_half.
  if (w.kind == 'f' && w.bytes == 2 && g.kind == 'i' && g.bytes == 2 && g.is_unsigned && same_lanes) return nullptr;
  return given;
}

// The size a kernel's argument type has, a pointer's elements' for a buffer: a built-in's from its
// name; any other's (a typedef, a struct, size_t) asked of the device once (src/type_size_probe.hpp).
// 0: not known (void, or the device could not say), so not checked.
std::size_t argument_size(detail::Engine& engine, const Kernel& kernel, std::size_t i) {
  const KernelArgInfo& info = kernel.arg(i);
  if (const std::size_t bytes = byte_size(info.type)) return bytes;
  std::string_view type = info.type_name;
  if (info.is_buffer() && !type.empty() && type.back() == '*') type.remove_suffix(1);
  if (type.empty() || type == "void" || type.find('*') != std::string_view::npos) return 0;
  return engine.type_size(kernel, i, std::string(type));
}

// Error texts are built only when an error is thrown: naming the request costs an allocation, and
// a launch is checked on every call.
const std::string& text(const std::string& s) { return s; }
template <std::invocable F>
std::string text(const F& describe) {
  return describe();
}

std::string arg_label(const Kernel& k, std::size_t i) {
  const auto& a = k.arg(i);
  return "argument " + std::to_string(i) + " ('" + a.type_name + " " + a.name + "') of kernel '" + k.name() + "'";
}

}  // namespace

const char* to_string(Policy p) { return p == Policy::sync ? "sync" : "async"; }

Policy parse_policy(const std::string& text) {
  if (text == "async") return Policy::async;
  if (text == "sync") return Policy::sync;
  throw UsageError("policy must be 'async' or 'sync', not '" + text + "'");
}

Controller::Controller(const ControllerOptions& options)
    : engine_(detail::cl_call("setting up the controller", [&] { return std::make_unique<detail::Engine>(options); })) {
}
Controller::Controller(std::unique_ptr<detail::Engine> adopted) : engine_(std::move(adopted)) {}

Controller::~Controller() {
  // The program's flow nodes stop submitting first (src/controller_life.hpp); then everything
  // submitted finishes; then HETFLOW_DUMP / HETFLOW_TRACE get what it did.
  engine_->life()->close();
  if (engine_->host_task_on_this_thread()) {
    // Destroyed by one of its own host tasks or hooks: waiting here would wait for that very task.
    detail::end_controller_elsewhere(std::move(engine_));
    return;
  }
  engine_->wait_until_quiet();  // host tasks may go on submitting while it waits
  if (engine_->recording) write_env_dumps(*this);
}

const DeviceInfo& Controller::device() const { return engine_->choice.device; }
const std::string& Controller::device_reason() const { return engine_->choice.reason; }
Policy Controller::policy() const { return engine_->policy; }
unsigned Controller::kernel_queues() const { return engine_->kernel_queue_count; }
const cl::Context& Controller::context() const { return engine_->context; }
ProgramCache& Controller::programs() { return engine_->programs; }
bool Controller::recording() const { return engine_->recording; }
std::vector<RequestRecord> Controller::records() const { return engine_->records(); }
std::string Controller::topology_dot() const { return engine_->topology_dot(); }

Kernel Controller::kernel(const std::string& file, const std::string& name, const std::string& build_options) {
  return detail::cl_call("loading kernel '" + name + "' of '" + file + "'",
                         [&] { return engine_->programs.from_file(file, build_options)->kernel(name); });
}
Kernel Controller::kernel_from_source(const std::string& source, const std::string& name,
                                      const std::string& build_options) {
  return detail::cl_call("loading kernel '" + name + "' from source",
                         [&] { return engine_->programs.from_source(source, build_options)->kernel(name); });
}

std::shared_ptr<detail::TileState> Controller::make_tile(const Extent& extent, std::size_t elem_size,
                                                         const char* elem_type, std::string name, bool device_only) {
  return engine_->make_tile(extent, elem_size, elem_type, std::move(name), device_only);
}

namespace {
// What the device cannot do is refused here, before the driver: PoCL aborts the process on a
// __local argument larger than its local memory (setup_kernel_arg_array_with_locals).
template <class What>
void check_against_device(const DeviceInfo& dev, const Range& range, const std::vector<detail::KernelArg>& args,
                          const What& what) {
  std::size_t local_bytes = 0;
  for (const auto& a : args)
    if (const auto* l = std::get_if<LocalMemory>(&a))
      if (__builtin_add_overflow(local_bytes, l->bytes, &local_bytes) || local_bytes > dev.local_mem_bytes)
        throw UsageError(text(what) + ": its __local arguments ask for more than the " +
                         std::to_string(dev.local_mem_bytes) + " bytes of local memory device '" + dev.name +
                         "' has (CL_DEVICE_LOCAL_MEM_SIZE)");
  if (!range.has_local()) return;
  std::size_t items = 1;
  for (unsigned d = 0; d < range.dims(); ++d) {
    const std::size_t n = range.local()[d];
    if (n == 0) throw UsageError(text(what) + ": the work-group size is 0 in dimension " + std::to_string(d));
    if (dev.max_work_item_sizes[d] && n > dev.max_work_item_sizes[d])
      throw UsageError(text(what) + ": a work-group of " + std::to_string(n) + " in dimension " + std::to_string(d) +
                       " exceeds device '" + dev.name + "''s " + std::to_string(dev.max_work_item_sizes[d]) +
                       " (CL_DEVICE_MAX_WORK_ITEM_SIZES)");
    items *= n;
  }
  if (items > dev.max_work_group_size)
    throw UsageError(text(what) + ": a work-group of " + std::to_string(items) + " work-items exceeds device '" +
                     dev.name + "''s " + std::to_string(dev.max_work_group_size) + " (CL_DEVICE_MAX_WORK_GROUP_SIZE)");
  // The driver would refuse it at the enqueue with a bare CL_INVALID_WORK_GROUP_SIZE.
  for (unsigned d = 0; d < range.dims() && !dev.non_uniform_work_groups; ++d)
    if (range.global()[d] % range.local()[d] != 0)
      throw UsageError(text(what) + ": the global size " + std::to_string(range.global()[d]) + " in dimension " +
                       std::to_string(d) + " is not a multiple of its work-group size " +
                       std::to_string(range.local()[d]) + ", which device '" + dev.name +
                       "' requires (it has no non-uniform work-groups)");
}

std::string zero_sizes(const Box& b) {
  static const char* const names[3] = {"x", "y", "z"};
  std::string s;
  for (int d = 0; d < 3; ++d)
    if (b.size[d] == 0) s += std::string(s.empty() ? "" : " and ") + names[d];
  return s;
}

// Why a tile of another engine is not this one's: that one may have been destroyed since.
std::string foreign(const detail::TileState& t) {
  return "tile '" + t.name + "' belongs to " +
         (detail::Engine::alive(t.owner) ? "another controller" : "a controller that no longer exists (destroyed)");
}

template <class What>
void check_tile(const detail::Engine& engine, const Access& a, const What& request, bool hook = false) {
  const auto& t = *a.tile;
  if (a.device_image && !hook)
    throw UsageError(text(request) + ": device_image(in(" + t.name +
                     ")) is for on_ready hooks only; transfers, kernels and host tasks say by their kind which image "
                     "they touch");
  if (t.freed.load()) throw UsageError(text(request) + ": tile '" + t.name + "' used after free");
  if (t.owner != engine.serial) throw UsageError(text(request) + ": " + foreign(t));
  if (a.box.empty())
    throw UsageError(text(request) + ": the region " + detail::region_text(a.box, t.extent) + " of tile '" + t.name +
                     "' is empty: its size is 0 along " + zero_sizes(a.box) +
                     " (a box's sizes are all given: {n, 1, 1} for n elements of a 1-D tile)");
  if (const std::string outside = detail::out_of_bounds(a); !outside.empty())
    throw UsageError(text(request) + ": " + outside);
}

// The message lists the kernel's parameters: a count alone does not say which argument is missing.
template <class What>
void check_arg_count(const Kernel& kernel, std::size_t given, const What& what) {
  if (given == kernel.num_args()) return;
  std::string sig;
  for (std::size_t i = 0; i < kernel.num_args(); ++i)
    sig += (i ? ", " : "") + kernel.arg(i).type_name + " " + kernel.arg(i).name;
  throw UsageError(text(what) + ": it takes " + std::to_string(kernel.num_args()) + " argument(s) (" + sig + "), got " +
                   std::to_string(given));
}

// "(16, 2)": the sizes up to the last of `dims`, and beyond it up to the last other than `unset`.
std::string sizes_text(const std::array<std::size_t, 3>& sizes, unsigned dims, std::size_t unset) {
  unsigned n = dims;
  for (unsigned d = dims; d < 3; ++d)
    if (sizes[d] != unset) n = d + 1;
  std::string s = "(";
  for (unsigned d = 0; d < n; ++d) s += (d ? ", " : "") + std::to_string(sizes[d]);
  return s + ")";
}

template <class What>
void check_global_range(const Range& range, const What& what) {
  // Range(128).local(16, 2) ran with a (16) work-group: OpenCL reads as many sizes as the range
  // has dimensions, and drops the others.
  for (unsigned d = range.dims(); d < 3; ++d) {
    if (range.has_local() && range.local()[d] != 1)
      throw UsageError(text(what) + ": the work-group size " + sizes_text(range.local(), range.dims(), 1) +
                       " has more dimensions than the global range " + sizes_text(range.global(), range.dims(), 1) +
                       " (" + std::to_string(range.dims()) + "-D; give the range as many)");
    if (range.has_offset() && range.offset()[d] != 0)
      throw UsageError(text(what) + ": the offset " + sizes_text(range.offset(), range.dims(), 0) +
                       " has more dimensions than the global range " + sizes_text(range.global(), range.dims(), 1) +
                       " (" + std::to_string(range.dims()) + "-D; give the range as many)");
  }
  std::size_t items = 1;
  for (unsigned d = 0; d < range.dims(); ++d) {
    const std::size_t g = range.global()[d], o = range.offset()[d];
    if (g == 0) throw UsageError(text(what) + ": the global range is 0 in dimension " + std::to_string(d));
    std::size_t end = 0;
    if (__builtin_add_overflow(o, g, &end) || __builtin_mul_overflow(items, g, &items))
      throw UsageError(text(what) + ": the global range " + std::to_string(g) + " at offset " + std::to_string(o) +
                       " in dimension " + std::to_string(d) + " overflows a size_t");
  }
}

// A kernel declaring reqd_work_group_size runs at that local size only. Given none, or another,
// PoCL and NVIDIA refuse the enqueue with a bare CL_INVALID_WORK_GROUP_SIZE, reported by a later
// wait. Tests of how a driver's refusal is reported need one that every device gives: with
// HETFLOW_DEBUG_UNCHECKED_LOCAL_SIZE another local size is left to the driver.
template <class What>
void check_required_local(const detail::Engine& engine, const Kernel& kernel, const Range& range, const What& what) {
  const auto& required = kernel.required_work_group_size();
  if (required[0] == 0) return;
  const std::string size = sizes_text(required, 1, 1);
  if (!range.has_local())
    throw UsageError(text(what) + ": it requires work-groups of " + size +
                     " (reqd_work_group_size) and the launch gives no local size: give Range(...).local" + size);
  if (range.local() != required && !engine.unchecked_local_size())
    throw UsageError(text(what) + ": it requires work-groups of " + size + " (reqd_work_group_size), got .local" +
                     sizes_text(range.local(), range.dims(), 1) + ": give Range(...).local" + size);
}

// A tile passed for argument i, a __global or __constant pointer: elements of another size or kind
// than the kernel reads would be garbage, not an error, once the kernel runs.
template <class What>
void check_tile_arg(detail::Engine& engine, const Kernel& kernel, std::size_t i, const Access& a, const What& what) {
  if (!kernel.arg(i).is_buffer())
    throw UsageError(text(what) + ": " + arg_label(kernel, i) + " is not a __global buffer, got tile '" + a.tile->name +
                     "'");
  check_tile(engine, a, what);
  if (a.writes() && kernel.arg(i).read_only)
    throw UsageError(text(what) + ": " + arg_label(kernel, i) + " is read-only (" +
                     (kernel.arg(i).address == CL_KERNEL_ARG_ADDRESS_CONSTANT ? "__constant" : "const") + "), got " +
                     to_string(a.role) + "(" + a.tile->name + "): the kernel cannot write it, pass in(" + a.tile->name +
                     ")");
  const ClType& wanted = kernel.arg(i).type;
  const std::size_t expected = argument_size(engine, kernel, i);
  if (expected && expected != a.tile->elem_size)
    throw UsageError(text(what) + ": " + arg_label(kernel, i) + " points to " + std::to_string(expected) +
                     "-byte elements" + (byte_size(wanted) ? "" : " (the device's sizeof of its type)") + ", tile '" +
                     a.tile->name + "' holds " + std::to_string(a.tile->elem_size) + "-byte elements");
  if (const char* held = kind_mismatch(wanted, a.tile->elem_parsed, a.tile->elem_type, true)) {
    std::string_view base = kernel.arg(i).type_name;
    if (!base.empty() && base.back() == '*') base.remove_suffix(1);
    throw UsageError(text(what) + ": " + arg_label(kernel, i) + " points to " + std::string(base) +
                     " elements, tile '" + a.tile->name + "' holds " + held);
  }
}

// How a program makes a value of an OpenCL C scalar or vector type, in C++: OpenCL C's own names
// (uint, float2) are not C++ types, cl_platform.h's are (cl_uint, cl_float2), and its vectors are
// unions, built with braces (cl_float2(1.0) does not compile).
std::string conversion_hint(std::string_view cl_name) {
  const ClType t = detail::parse_cl_type(cl_name);
  std::string host = "cl_" + std::string(cl_name);
  for (std::string_view same : {"float", "double", "int", "short", "char"})
    if (cl_name == same) host = std::string(cl_name);
  if (t.lanes == 1) return host + "(value)";
  static const char* const lanes[] = {"", "", "{{x, y}}", "{{x, y, z}}", "{{x, y, z, w}}"};
  return host + (t.lanes <= 4 ? lanes[t.lanes] : "{{...}} (" + std::to_string(t.lanes) + " values)");
}

template <class What>
void check_scalar_arg(detail::Engine& engine, const Kernel& kernel, std::size_t i, const detail::ScalarArg& s,
                      const What& what) {
  const KernelArgInfo& info = kernel.arg(i);
  if (info.is_buffer() || info.is_local())
    throw UsageError(text(what) + ": " + arg_label(kernel, i) + " is a " + (info.is_local() ? "__local" : "__global") +
                     " pointer, got a scalar (pass tiles as in(t), out(t) or io(t), local memory as local_mem<T>(n))");
  const ClType& wanted = info.type;
  const std::size_t expected = argument_size(engine, kernel, i);
  if (expected && expected != s.size)
    throw UsageError(text(what) + ": " + arg_label(kernel, i) + " takes " + info.type_name + " (" +
                     std::to_string(expected) + " bytes), got " +
                     (s.type ? std::string(s.type) + " (" + std::to_string(s.size) + " bytes)"
                             : "a " + std::to_string(s.size) + "-byte value") +
                     (byte_size(wanted) ? " (convert it: " + conversion_hint(info.type_name) + ")"
                                        : std::string(" (the device's sizeof of its type; give a C++ value of that "
                                                      "size and layout)")));
  if (const char* given = kind_mismatch(wanted, s.parsed, s.type))
    throw UsageError(text(what) + ": " + arg_label(kernel, i) + " takes " + info.type_name + ", got " +
                     std::string(given) + " (convert it: " + conversion_hint(info.type_name) + ")");
}

// Checks every argument against its parameter, in order; returns the tiles among them, the launch's accesses.
template <class What>
detail::AccessList check_args(detail::Engine& engine, const Kernel& kernel, const std::vector<detail::KernelArg>& args,
                              const What& what) {
  detail::AccessList accesses;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (const auto* a = std::get_if<Access>(&args[i])) {
      check_tile_arg(engine, kernel, i, *a, what);
      accesses.push_back(*a);
    } else if (const auto* s = std::get_if<detail::ScalarArg>(&args[i])) {
      check_scalar_arg(engine, kernel, i, *s, what);
    } else if (!kernel.arg(i).is_local()) {
      throw UsageError(text(what) + ": " + arg_label(kernel, i) + " is not a __local pointer, got local_mem");
    }
  }
  return accesses;
}
}  // namespace

void Controller::submit_transfer(bool to_device, Access access) {
  std::string name = to_device ? "move_to(" : "move_from(";
  name.append(access.tile->name).push_back(')');
  check_tile(*engine_, access, name);
  if (access.tile->device_only)
    throw UsageError(name + ": tile '" + access.tile->name + "' is device-only, it has no host image to move");
  auto r = make_request<TransferWork>(to_device ? Kind::h2d : Kind::d2h, std::move(name));
  r->lane = to_device ? engine_->h2d_lane() : engine_->d2h_lane();
  if (!(access.box == Box::whole(access.tile->extent))) r->name += access.box.str(access.tile->extent.dims);
  r->accesses.push_back(std::move(access));
  engine_->submit(std::move(r));
}

void Controller::submit_launch(const Kernel& home_kernel, const Range& range, std::vector<detail::KernelArg> args) {
  if (!home_kernel) throw UsageError("launch of an empty Kernel handle");
  // A loop over several devices runs its body, written against its first controller, here too.
  Kernel kernel = home_kernel;
  detail::DeviceView::translate_launch(*engine_, kernel, args);
  const auto what = [&] { return "launch of kernel '" + kernel.name() + "'"; };
  if (kernel.context()() != engine_->context())
    throw UsageError(what() + ": the kernel was built for " +
                     (detail::Engine::alive(kernel.context()()) ? "another controller's context"
                                                                : "a controller that no longer exists (destroyed)"));
  check_arg_count(kernel, args.size(), what);
  check_global_range(range, what);
  check_against_device(engine_->choice.device, range, args, what);
  check_required_local(*engine_, kernel, range, what);
  detail::AccessList accesses = check_args(*engine_, kernel, args, what);
  std::string name = kernel.name();
  auto r =
      make_request<KernelWork>(Kind::kernel, std::move(name), KernelWork{std::move(kernel), range, std::move(args)});
  r->accesses = std::move(accesses);
  engine_->submit(std::move(r));  // which picks its kernel queue
}

void Controller::submit_host(std::string name, detail::UniqueFunction<void()> fn, std::vector<Access> accesses) {
  const std::string what = "host task '" + name + "'";
  for (const auto& a : accesses) {
    check_tile(*engine_, a, what);
    if (a.tile->device_only)
      throw UsageError(what + ": tile '" + a.tile->name + "' is device-only, a host task cannot access it");
  }
  auto r = make_request<HostWork>(Kind::host, std::move(name), HostWork{std::move(fn)});
  r->accesses.assign(std::make_move_iterator(accesses.begin()), std::make_move_iterator(accesses.end()));
  engine_->submit(std::move(r));
}

void Controller::submit_hook(std::string name, detail::UniqueFunction<void(const Outcome&)> fn,
                             std::vector<Access> accesses) {
  const std::string what = "on_ready hook '" + name + "'";
  for (const auto& a : accesses) {
    check_tile(*engine_, a, what, true);
    if (a.tile->device_only && !a.device_image)
      throw UsageError(what + ": tile '" + a.tile->name +
                       "' is device-only: wait for its device image with device_image(in(t))");
  }
  auto r = make_request<HookWork>(Kind::host, std::move(name), HookWork{std::move(fn)});
  r->accesses.assign(std::make_move_iterator(accesses.begin()), std::make_move_iterator(accesses.end()));
  engine_->submit(std::move(r));
}

void Controller::wait_all() { engine_->wait_all(); }

void Controller::wait_tile(const std::shared_ptr<detail::TileState>& tile) {
  if (tile->owner != engine_->serial) throw UsageError("wait: " + foreign(*tile));
  engine_->wait_tile(tile);
}

void Controller::free_tile(const std::shared_ptr<detail::TileState>& tile) {
  if (tile->owner != engine_->serial) throw UsageError("free: " + foreign(*tile));
  if (tile->freed.exchange(true)) throw UsageError("free: tile '" + tile->name + "' was already freed");
  // Runs once every earlier request on the tile is done; dropping the buffers then returns the
  // memory (OpenCL frees it when no command uses it any more).
  std::weak_ptr<detail::TileState> weak = tile;
  auto release = [weak] {
    if (auto t = weak.lock()) {
      const cl_int err = t->unmap_host_image();
      t->host_buffer = cl::Buffer();
      t->device_buffer = cl::Buffer();
      // Fails the release, so a wait reports it.
      if (err != CL_SUCCESS) throw OpenCLError(err, "clEnqueueUnmapMemObject of tile '" + t->name + "'s host image");
    }
  };
  auto r = make_request<HostWork>(Kind::release, "free(" + tile->name + ")", HostWork{std::move(release)});
  r->accesses.push_back(Access{tile, Box::whole(tile->extent), Role::io});
  engine_->submit(std::move(r));
}

}  // namespace hetflow
