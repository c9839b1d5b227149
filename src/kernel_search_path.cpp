#include <hetflow/errors.hpp>
#include <hetflow/program.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "settings.hpp"

namespace hetflow {
namespace fs = std::filesystem;

namespace {
// The installed kernels sit at <prefix>/share/hetflow/kernels_cl next to <prefix>/lib*/libhetflow.so;
// finding them from the library's own location keeps a relocated install working.
std::string installed_next_to_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&installed_next_to_library), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  fs::path lib = fs::canonical(info.dli_fname, ec);
  if (ec) return {};
  return (lib.parent_path().parent_path() / "share" / "hetflow" / "kernels_cl").string();
}
}  // namespace

std::vector<std::string> kernel_search_path() {
  std::vector<std::string> dirs = detail::env_kernel_path();
  dirs.push_back(HETFLOW_SOURCE_KERNEL_DIR);
  if (auto next = installed_next_to_library(); !next.empty()) dirs.push_back(next);
  dirs.push_back(HETFLOW_INSTALL_KERNEL_DIR);
  return dirs;
}

std::string find_kernel_file(const std::string& file) {
  std::error_code ec;
  if (fs::is_regular_file(file, ec)) return file;
  std::vector<std::string> tried{fs::absolute(file, ec).string()};
  if (!fs::path(file).is_absolute()) {
    for (const auto& dir : kernel_search_path()) {
      fs::path candidate = fs::path(dir) / file;
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
      tried.push_back(candidate.string());
    }
  }
  std::string msg = "kernel file '" + file + "' not found; searched:";
  for (const auto& t : tried) msg += "\n  " + t;
  msg += "\n(set HETFLOW_KERNEL_PATH to the directory holding it)";
  throw FileNotFoundError(msg);
}

}  // namespace hetflow
