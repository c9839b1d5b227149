#include <hetflow/errors.hpp>
#include <hetflow/program.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "settings.hpp"

namespace hetflow {
namespace fs = std::filesystem;

namespace {
// Where this library is loaded from, or an empty path.
fs::path library_file() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_file), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  fs::path lib = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path() : lib;
}

bool same_directory(const fs::path& a, const std::string& b) {
  std::error_code ec;
  return !a.empty() && fs::equivalent(a, b, ec);
}
}  // namespace

std::vector<std::string> kernel_search_path() {
  std::vector<std::string> dirs = detail::env_kernel_path();
  // Then the working directory (find_kernel_file relies on its place: right after the variable's).
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  dirs.push_back(ec ? std::string(".") : cwd.string());
  const fs::path lib = library_file();
  // The library in its build tree finds the source tree's kernels; an installed copy never looks
  // at the machine it was built on.
  if (same_directory(lib.parent_path(), HETFLOW_BUILD_LIBRARY_DIR)) dirs.push_back(HETFLOW_SOURCE_KERNEL_DIR);
  // The installed kernels sit at <prefix>/share/hetflow/kernels_cl next to <prefix>/lib*/libhetflow.so;
  // finding them from the library's own location keeps a relocated install working.
  if (!lib.empty()) dirs.push_back((lib.parent_path().parent_path() / "share" / "hetflow" / "kernels_cl").string());
  if (std::find(dirs.begin(), dirs.end(), HETFLOW_INSTALL_KERNEL_DIR) == dirs.end())
    dirs.push_back(HETFLOW_INSTALL_KERNEL_DIR);
  return dirs;
}

std::string find_kernel_file(const std::string& file) {
  if (file.empty()) throw UsageError("kernel file: the name is empty");
  std::error_code ec;
  const fs::path given(file);
  std::vector<std::string> tried;
  auto found = [&](const fs::path& candidate) {
    if (fs::is_regular_file(candidate, ec)) return true;
    // A directory of that name is there, and listing it as "not found" sent a user looking for it.
    tried.push_back(fs::absolute(candidate, ec).string() + (fs::is_directory(candidate, ec) ? " (a directory)" : ""));
    return false;
  };
  if (given.is_absolute()) {
    if (found(given)) return file;
  } else {
    // HETFLOW_KERNEL_PATH first, as documented: a file of the same name that happens to sit in the
    // working directory must not replace the one the user pointed at. Then the working directory,
    // then hetflow's own kernels.
    const std::vector<std::string> dirs = kernel_search_path();
    const std::size_t working_directory = detail::env_kernel_path().size();
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      if (i == working_directory) {
        if (found(given)) return file;  // as given: a program's label then reads as the user wrote it
      } else if (found(fs::path(dirs[i]) / given)) {
        return (fs::path(dirs[i]) / given).string();
      }
    }
  }
  std::string msg = "kernel file '" + file + "' not found; searched:";
  for (const auto& t : tried) msg += "\n  " + t;
  msg += "\n(set HETFLOW_KERNEL_PATH to the directory holding it)";
  throw FileNotFoundError(msg);
}

}  // namespace hetflow
