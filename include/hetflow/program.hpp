#pragma once
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <hetflow/detail/cl_type.hpp>
#include <hetflow/errors.hpp>
#include <hetflow/opencl.hpp>

namespace hetflow {

// What the OpenCL driver reports of one kernel argument (programs are always built with
// -cl-kernel-arg-info, so both NVIDIA and PoCL answer).
struct KernelArgInfo {
  cl_kernel_arg_address_qualifier address = CL_KERNEL_ARG_ADDRESS_PRIVATE;
  std::string type_name;  // "float*", "int", ...
  std::string name;
  // The pointer's elements are const, or in __constant memory: the kernel cannot write them, so a
  // launch refuses out() and io() for it (the hazards would claim a write that never happens).
  bool read_only = false;
  // type_name taken apart (a pointer's: its elements' type), once: every launch checks against it.
  detail::ClType type;
  bool is_buffer() const {
    return address == CL_KERNEL_ARG_ADDRESS_GLOBAL || address == CL_KERNEL_ARG_ADDRESS_CONSTANT;
  }
  bool is_local() const { return address == CL_KERNEL_ARG_ADDRESS_LOCAL; }
};

// A kernel of a built program: its name, its arguments as the driver reports them and the
// OpenCL handle. Cheap to copy; the controller sets arguments only on its serial enqueue path.
// Kernel() is an empty handle (operator bool says false): every accessor throws UsageError on it.
class Kernel {
 public:
  Kernel() = default;
  const std::string& name() const { return state().name; }
  const std::string& program_label() const { return state().program_label; }
  std::size_t num_args() const { return state().args.size(); }
  const KernelArgInfo& arg(std::size_t i) const { return state().args.at(i); }
  const cl::Kernel& handle() const { return state().kernel; }
  const cl::Context& context() const { return state().context; }
  // The program's source text and the options it was built with (less the engine's own; a file's
  // own directory's -I included): what another controller rebuilds it from when a loop over
  // several devices runs the same kernel there.
  const std::shared_ptr<const std::string>& source() const { return state().source; }
  const std::string& build_options() const { return state().options; }
  // Its __attribute__((reqd_work_group_size(x, y, z))), as CL_KERNEL_COMPILE_WORK_GROUP_SIZE says;
  // {0, 0, 0} when it declares none. A launch must then give exactly this local size (UsageError).
  const std::array<std::size_t, 3>& required_work_group_size() const { return state().required_local; }
  explicit operator bool() const { return state_ != nullptr; }

 private:
  friend class Program;
  struct State {
    std::string name, program_label;
    std::vector<KernelArgInfo> args;
    cl::Kernel kernel;
    cl::Context context;
    std::shared_ptr<const std::string> source;
    std::string options;
    std::array<std::size_t, 3> required_local{0, 0, 0};
  };
  const State& state() const {
    if (!state_) throw UsageError("use of an empty Kernel handle (made by Kernel() and never assigned)");
    return *state_;
  }
  std::shared_ptr<State> state_;
};

// A program built for one device with one set of options. Thread-safe: kernel() creates each kernel once,
// under a lock.
class Program {
 public:
  Program(cl::Program program, cl::Context context, std::string label, std::string options,
          std::shared_ptr<const std::string> source = nullptr);
  const std::string& label() const { return label_; }  // the file it came from, or "<source>"
  // The options given; a file's have -I of its directory first (ProgramCache::from_file).
  const std::string& options() const { return options_; }
  const std::shared_ptr<const std::string>& source() const { return source_; }  // null if not given
  // The kernels' names as the source declares them, also where the driver knows one by another
  // name (PoCL 3.1 calls a kernel named after an OpenCL built-in, `mix`, `_cl_mix`).
  const std::vector<std::string>& kernel_names() const { return kernel_names_; }
  // The kernel `name` as the source declares it (the driver's name for it is taken too; the
  // Kernel's name() is the source's either way). Throws UsageError listing the program's kernels
  // when `name` is not one of them.
  Kernel kernel(const std::string& name) const;
  const cl::Program& handle() const { return program_; }

 private:
  cl::Program program_;
  cl::Context context_;
  std::string label_, options_;
  std::shared_ptr<const std::string> source_;
  std::vector<std::string> kernel_names_;
  std::vector<std::string> driver_names_;  // kernel_names_[i] is driver_names_[i] to the driver
  mutable std::mutex mutex_;
  mutable std::map<std::string, Kernel> kernels_;  // by the driver's name
};

// Builds .cl programs once per (source, options) for one device of one context.
// Thread-safe: every method may be called from any thread (one lock guards the cache; two threads
// asking for the same program may both build it, and one build is kept).
// An absolute file is taken as it is; a relative one is looked up, in order, in each directory of
// HETFLOW_KERNEL_PATH (':'-separated), the working directory, the source tree's kernels_cl/, and the
// installed share/hetflow/kernels_cl/ next to the library. The file's own directory comes first on
// its include path (`-I <dir>` before the given options, which Program::options() then shows), so
// `#include "helper.h"` finds helper.h beside the .cl file, as a C compiler would; more -I options
// are for other directories. A directory with whitespace is passed quoted, which PoCL 3.1 does not
// unquote (there such a directory is not searched; docs/drivers.md); one with a double quote in its
// name is not passed.
class ProgramCache {
 public:
  ProgramCache(cl::Context context, cl::Device device);
  std::shared_ptr<const Program> from_file(const std::string& file, const std::string& options = {});
  std::shared_ptr<const Program> from_source(const std::string& source, const std::string& options = {},
                                             const std::string& label = "<source>");
  std::size_t size() const;
  // Appended to every later build's options (not to what Program::options() reports): the engine's
  // driver workarounds (src/pocl_kernel_cache.hpp).
  void add_build_option(const std::string& option);

 private:
  std::shared_ptr<const Program> build(const std::string& source, const std::string& options, const std::string& label);
  cl::Context context_;
  cl::Device device_;
  std::string device_name_;
  std::string extra_options_;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const Program>> by_key_;
};

// The directories searched for .cl files, in order (what FileNotFoundError lists): HETFLOW_KERNEL_PATH's,
// the working directory, then hetflow's own kernels (beside the library, and where it installs them).
std::vector<std::string> kernel_search_path();
// The full path of `file` on that search path; throws FileNotFoundError naming every place tried.
std::string find_kernel_file(const std::string& file);

}  // namespace hetflow
