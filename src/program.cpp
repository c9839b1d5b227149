#include <hetflow/errors.hpp>
#include <hetflow/program.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string_view>

#include "cl_call.hpp"
#include "log.hpp"

namespace hetflow {
namespace {

std::vector<std::string> split_names(const std::string& joined) {
  std::vector<std::string> names;
  std::stringstream ss(joined);
  for (std::string n; std::getline(ss, n, ';');)
    if (!n.empty() && n != std::string(1, '\0')) names.push_back(n);
  return names;
}

// Kernel argument metadata is only guaranteed when the program is built with this option.
std::string with_arg_info(const std::string& options) {
  return options.find("-cl-kernel-arg-info") == std::string::npos
             ? (options.empty() ? "-cl-kernel-arg-info" : options + " -cl-kernel-arg-info")
             : options;
}

// PoCL compiles a copy of the source under its cache (".../kcache/tempfile_XXXXXX.cl") and its log
// points there; the user's lines are in `label`, line and column unchanged.
std::string with_file_named(std::string log, const std::string& label) {
  static const std::regex pocl_copy(R"([^\s:]*/kcache/tempfile_[A-Za-z0-9]+\.cl)");
  return std::regex_replace(log, pocl_copy, label);
}

// The kernel file's own directory, first on the include path: `#include "helper.h"` finds the file
// beside the .cl file, as a C compiler's quoted include does. The driver compiles a copy of the
// text (PoCL's under its cache), so without this the include is looked up elsewhere. A directory
// with whitespace is quoted, as NVIDIA's and newer PoCL's option parsers take it (PoCL 3.1 does not
// unquote it, so there such a directory is not searched, but the build still works); one with a
// double quote is left out: no driver's quoting takes it, and PoCL 3.1 fails the build.
std::string with_file_directory(const std::string& options, const std::string& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) return options;
  const std::string dir = absolute.lexically_normal().parent_path().string();
  if (dir.empty() || dir.find('"') != std::string::npos) return options;
  const bool spaces = dir.find_first_of(" \t\n\r\f\v") != std::string::npos;
  const std::string include = spaces ? "-I \"" + dir + "\"" : "-I " + dir;
  return options.empty() ? include : include + " " + options;
}

}  // namespace

Program::Program(cl::Program program, cl::Context context, std::string label, std::string options,
                 std::shared_ptr<const std::string> source)
    : program_(std::move(program)),
      context_(std::move(context)),
      label_(std::move(label)),
      options_(std::move(options)),
      source_(std::move(source)) {
  driver_names_ = split_names(detail::cl_call("the kernel names of program '" + label_ + "'",
                                              [&] { return program_.getInfo<CL_PROGRAM_KERNEL_NAMES>(); }));
  // PoCL 3.1 prefixes "_cl_" to a kernel named after an OpenCL built-in (mix, clamp, dot...), and
  // knows it by that name only: the program asks for the name it wrote. A "_cl_" name the source
  // spells out, or whose bare name another kernel has, is the kernel's own.
  kernel_names_ = driver_names_;
  for (auto& n : kernel_names_) {
    constexpr std::string_view prefix = "_cl_";
    if (n.size() <= prefix.size() || n.compare(0, prefix.size(), prefix) != 0) continue;
    if (source_ && source_->find(n) != std::string::npos) continue;
    const std::string bare = n.substr(prefix.size());
    if (std::find(driver_names_.begin(), driver_names_.end(), bare) == driver_names_.end()) n = bare;
  }
}

Kernel Program::kernel(const std::string& requested) const {
  std::lock_guard lock(mutex_);
  auto at = std::size_t(std::find(kernel_names_.begin(), kernel_names_.end(), requested) - kernel_names_.begin());
  if (at == kernel_names_.size())
    at = std::size_t(std::find(driver_names_.begin(), driver_names_.end(), requested) - driver_names_.begin());
  if (at == kernel_names_.size()) {
    std::string known;
    for (const auto& k : kernel_names_) known += (known.empty() ? "" : ", ") + k;
    throw UsageError("program '" + label_ + "' has no kernel named '" + requested +
                     "'; its kernels are: " + (known.empty() ? "(none)" : known));
  }
  const std::string& name = kernel_names_[at];
  const std::string& driver_name = driver_names_[at];
  if (auto it = kernels_.find(driver_name); it != kernels_.end()) return it->second;
  Kernel k;
  k.state_ = std::make_shared<Kernel::State>();
  k.state_->name = name;
  k.state_->program_label = label_;
  k.state_->context = context_;
  k.state_->source = source_;
  k.state_->options = options_;
  detail::cl_call("creating kernel '" + name + "' of program '" + label_ + "'", [&] {
    k.state_->kernel = cl::Kernel(program_, driver_name.c_str());
    const cl_uint nargs = k.state_->kernel.getInfo<CL_KERNEL_NUM_ARGS>();
    for (cl_uint i = 0; i < nargs; ++i) {
      KernelArgInfo a;
      a.address = k.state_->kernel.getArgInfo<CL_KERNEL_ARG_ADDRESS_QUALIFIER>(i);
      a.type_name = k.state_->kernel.getArgInfo<CL_KERNEL_ARG_TYPE_NAME>(i);
      a.name = k.state_->kernel.getArgInfo<CL_KERNEL_ARG_NAME>(i);
      a.read_only =
          a.address == CL_KERNEL_ARG_ADDRESS_CONSTANT ||
          (a.is_buffer() && (k.state_->kernel.getArgInfo<CL_KERNEL_ARG_TYPE_QUALIFIER>(i) & CL_KERNEL_ARG_TYPE_CONST));
      while (!a.type_name.empty() && a.type_name.back() == '\0') a.type_name.pop_back();
      while (!a.name.empty() && a.name.back() == '\0') a.name.pop_back();
      a.type = detail::parse_cl_pointee(a.type_name);
      k.state_->args.push_back(std::move(a));
    }
    // Asked once here, not on every launch: launches are checked against it.
    const auto devices = program_.getInfo<CL_PROGRAM_DEVICES>();
    if (!devices.empty()) {
      std::size_t sizes[3] = {0, 0, 0};
      const cl_int err = clGetKernelWorkGroupInfo(k.state_->kernel(), devices.front()(),
                                                  CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof sizes, sizes, nullptr);
      if (err != CL_SUCCESS) throw OpenCLError(err, "clGetKernelWorkGroupInfo(CL_KERNEL_COMPILE_WORK_GROUP_SIZE)");
      k.state_->required_local = {sizes[0], sizes[1], sizes[2]};
    }
  });
  kernels_.emplace(driver_name, k);
  return k;
}

ProgramCache::ProgramCache(cl::Context context, cl::Device device)
    : context_(std::move(context)), device_(std::move(device)) {
  device_name_ =
      detail::cl_call("the name of the program cache's device", [&] { return device_.getInfo<CL_DEVICE_NAME>(); });
  while (!device_name_.empty() && device_name_.back() == '\0') device_name_.pop_back();
}

std::shared_ptr<const Program> ProgramCache::from_file(const std::string& file, const std::string& options) {
  const std::string path = find_kernel_file(file);
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_key_.find({"file:" + path, options}); it != by_key_.end()) return it->second;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileNotFoundError("kernel file '" + path + "' exists but cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  std::shared_ptr<const Program> program;
  try {
    program = build(text.str(), with_file_directory(options, path), path);
  } catch (const BuildError& e) {
    // An include not found beside a file in a directory with whitespace or a double quote: that
    // directory was not searched (with_file_directory), which the compiler's log cannot say.
    const std::string dir = std::filesystem::absolute(path).lexically_normal().parent_path().string();
    if (dir.find_first_of(" \t\n\r\f\v\"") == std::string::npos || e.log.find("not found") == std::string::npos) throw;
    throw BuildError(e.device, e.file,
                     e.log + "\n(hetflow: the kernel file's directory '" + dir +
                         "' has whitespace or a double quote in its name, so this device's compiler may not search "
                         "it for #include files (PoCL 3.1 does not): move the kernels to a directory without, or "
                         "put the headers where an -I option of a plain path finds them)");
  }
  std::lock_guard lock(mutex_);
  return by_key_.try_emplace({"file:" + path, options}, program).first->second;
}

std::shared_ptr<const Program> ProgramCache::from_source(const std::string& source, const std::string& options,
                                                         const std::string& label) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_key_.find({"source:" + source, options}); it != by_key_.end()) return it->second;
  }
  auto program = build(source, options, label);
  std::lock_guard lock(mutex_);
  return by_key_.try_emplace({"source:" + source, options}, program).first->second;
}

std::size_t ProgramCache::size() const {
  std::lock_guard lock(mutex_);
  return by_key_.size();
}

void ProgramCache::add_build_option(const std::string& option) {
  if (option.empty()) return;
  std::lock_guard lock(mutex_);
  extra_options_ += (extra_options_.empty() ? "" : " ") + option;
}

std::shared_ptr<const Program> ProgramCache::build(const std::string& source, const std::string& options,
                                                   const std::string& label) {
  std::string full_options = with_arg_info(options);
  {
    std::lock_guard lock(mutex_);
    if (!extra_options_.empty()) full_options += " " + extra_options_;
  }
  const char* text = source.c_str();
  const std::size_t length = source.size();
  cl_int err = CL_SUCCESS;
  cl_program raw = clCreateProgramWithSource(context_(), 1, &text, &length, &err);
  if (err != CL_SUCCESS) throw OpenCLError(err, "clCreateProgramWithSource for '" + label + "'");
  cl::Program program(raw);  // takes ownership
  cl_device_id dev = device_();
  log().debug("building '{}' for '{}' with options '{}'", label, device_name_, full_options);
  err = clBuildProgram(raw, 1, &dev, full_options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string build_log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device_);
    while (!build_log.empty() && (build_log.back() == '\0' || build_log.back() == '\n')) build_log.pop_back();
    if (err != CL_BUILD_PROGRAM_FAILURE) build_log = std::string(cl_error_name(err)) + "\n" + build_log;
    throw BuildError(device_name_, label, with_file_named(build_log, label));
  }
  return std::make_shared<const Program>(std::move(program), context_, label, options,
                                         std::make_shared<const std::string>(source));
}

}  // namespace hetflow
