#include "device_view.hpp"

#include "engine.hpp"

namespace hetflow::detail {

namespace {
thread_local DeviceView::Scope* installed = nullptr;
}

DeviceView::DeviceView(Controller& home, Controller& device, std::string side)
    : home_(engine_of(home)), device_(device), side_(std::move(side)) {}

DeviceView::Scope::Scope(DeviceView& view) : view_(view), saved_(installed) { installed = this; }
DeviceView::Scope::~Scope() { installed = saved_; }

Access DeviceView::own(const Access& a) {
  const auto& home = a.tile;
  if (home->owner == engine_of(device_).serial) return a;
  if (home->owner != home_.serial)
    throw UsageError("parallel_for on " + side_ + ": tile '" + home->name +
                     "' belongs to neither the loop's first controller nor this one");
  if (home->freed.load()) throw UsageError("parallel_for on " + side_ + ": tile '" + home->name + "' used after free");
  std::lock_guard lock(m_);
  auto& mine = tiles_[home->id];
  // Made under the lock: two chunks of this device at once must not make two device images.
  if (!mine) mine = engine_of(device_).make_alias_tile(home);
  return Access{mine, a.box, a.role, a.device_image};
}

Kernel DeviceView::own_kernel(const Kernel& k) {
  std::lock_guard lock(m_);
  if (auto it = kernels_.find(k.handle()()); it != kernels_.end()) return it->second.second;
  if (!k.source())
    throw UsageError("parallel_for on " + side_ + ": kernel '" + k.name() + "' has no source to build it from");
  Kernel mine = device_.programs().from_source(*k.source(), k.build_options(), k.program_label())->kernel(k.name());
  kernels_.emplace(k.handle()(), std::pair{k, mine});  // the home kernel held: its handle is not reused
  return mine;
}

void DeviceView::translate_launch(Engine& engine, Kernel& kernel, std::vector<KernelArg>& args) {
  if (!installed) return;
  DeviceView* view = &installed->view_;
  if (&engine == &view->home_)
    throw UsageError("launch of kernel '" + kernel.name() + "' on the loop's first controller from a chunk of " +
                     view->side_ +
                     ": a device body launches on the Controller& it is given, with the home kernels and tiles, "
                     "not on a controller it captured");
  if (&engine_of(view->device_) != &engine) return;
  ++installed->launches_;
  if (kernel && kernel.context()() != engine.context()) kernel = view->own_kernel(kernel);
  for (auto& arg : args) {
    auto* a = std::get_if<Access>(&arg);
    if (!a || a->tile->owner != view->home_.serial) continue;
    {
      std::lock_guard lock(view->m_);
      const bool made = view->tiles_.count(a->tile->id) != 0;
      if (!made && !a->tile->device_only)
        throw UsageError(
            "launch of kernel '" + kernel.name() + "' on " + view->side_ + ": tile '" + a->tile->name +
            "' is in neither LoopBody::reads, LoopBody::constants nor the chunk's writes, so this device's "
            "image of it would hold nothing the loop put there");
    }
    *a = view->own(*a);
  }
}

}  // namespace hetflow::detail
