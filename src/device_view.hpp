#pragma once
// How a loop over several devices (include/hetflow/parallel_for.hpp) runs one body on a controller
// that is not the one its tiles and kernels belong to. Each further device gets, per home tile the
// loop moves or writes, a tile of its own over the home tile's host image (Engine::make_alias_tile),
// and per kernel the same program rebuilt on its own context. While the loop's device body runs for
// that device, the view is installed on the thread, and Controller::submit_launch translates the
// launch's home tiles and kernel through it: the user writes the body once, against the home
// controller, and every device chunk's transfer back lands in the home tile's host image.
#include <hetflow/controller.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hetflow::detail {

class Engine;

class DeviceView {
 public:
  // `side`: how errors name the device ("device 1 (NAME)").
  DeviceView(Controller& home, Controller& device, std::string side);
  Controller& device() const { return device_; }
  const std::string& side() const { return side_; }

  // The access on the device's own tile over the home tile `a.tile` (same box and role), made on
  // first use. A home device-only tile gets a device-only tile of the device's own: scratch space,
  // whose contents are never shared. UsageError for a tile of neither controller, or freed.
  Access own(const Access& a);

  // While alive, launches on the device's controller from this thread go through `view`, and are
  // counted: a chunk's body that launched nothing there lost its results (launches()).
  class Scope {
   public:
    explicit Scope(DeviceView& view);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    unsigned launches() const { return launches_; }

   private:
    friend class DeviceView;
    DeviceView& view_;
    Scope* saved_;
    unsigned launches_ = 0;
  };
  // Called by Controller::submit_launch on `engine`: where a view for it is installed on this
  // thread, the home controller's kernel and tiles become the device's. The tiles must be ones the
  // loop made the device's own (reads, the chunk's writes) or device-only scratch: another home
  // tile's device image on this device would hold nothing the loop put there (UsageError). A launch
  // on the home controller meanwhile is refused (UsageError): the body captured it instead of using
  // the Controller& it was given, and its results would never come back.
  static void translate_launch(Engine& engine, Kernel& kernel, std::vector<KernelArg>& args);

 private:
  Kernel own_kernel(const Kernel& k);
  const Engine& home_;
  Controller& device_;
  std::string side_;
  std::mutex m_;
  std::map<std::uint64_t, std::shared_ptr<TileState>> tiles_;  // by home tile id; each keeps its home tile
  std::map<cl_kernel, std::pair<Kernel, Kernel>> kernels_;     // home handle -> (home kernel, own kernel)
};

}  // namespace hetflow::detail
