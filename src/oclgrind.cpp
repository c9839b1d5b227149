#include "oclgrind.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

namespace hetflow::detail {
namespace {
// The directory register_oclgrind_if_named made, and OCL_ICD_VENDORS before it: left behind, every
// process that used Oclgrind left a /tmp/hetflow-icd-PID of its own.
struct Registration {
  std::mutex mutex;
  std::filesystem::path dir;
  std::optional<std::string> previous_vendors;
};
Registration& registration() {
  static Registration r;
  return r;
}
}  // namespace

std::string oclgrind_icd_library() {
  for (const char* path : {"/usr/lib/oclgrind/liboclgrind-rt-icd.so", "/usr/local/lib/liboclgrind-rt-icd.so",
                           "/usr/lib/x86_64-linux-gnu/liboclgrind-rt-icd.so"})
    if (std::filesystem::exists(path)) return path;
  return {};
}

std::string register_oclgrind_if_named(std::string_view selection, bool loader_started) {
  std::string lower(selection);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (lower.find("oclgrind") == std::string::npos) return {};
  const std::string library = oclgrind_icd_library();
  if (library.empty()) return "Oclgrind is not installed (apt-get install oclgrind)";
  if (loader_started)
    return "the OpenCL ICD loader had already started in this process without it; register it before the "
           "first OpenCL call (OCL_ICD_VENDORS=DIR, DIR holding oclgrind.icd that names " +
           library + ")";
  namespace fs = std::filesystem;
  std::lock_guard lock(registration().mutex);
  const char* current = std::getenv("OCL_ICD_VENDORS");
  const fs::path from =
      current && *current && fs::is_directory(current) ? fs::path(current) : fs::path("/etc/OpenCL/vendors");
  const fs::path dir = fs::temp_directory_path() / ("hetflow-icd-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return "cannot create " + dir.string() + ": " + ec.message();
  for (const auto& entry : fs::directory_iterator(from, ec))
    if (entry.path().extension() == ".icd")
      fs::copy_file(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing, ec);
  std::ofstream(dir / "oclgrind.icd") << library << "\n";
  if (registration().dir.empty())  // a second registration before the loader started keeps the first's
    registration().previous_vendors = current ? std::optional<std::string>(current) : std::nullopt;
  registration().dir = dir;
  ::setenv("OCL_ICD_VENDORS", dir.c_str(), 1);
  return {};
}

void remove_oclgrind_registration() noexcept {
  std::lock_guard lock(registration().mutex);
  auto& r = registration();
  if (r.dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(r.dir, ec);
  // A child process must find the vendors this one was given, not a directory that is gone.
  if (r.previous_vendors)
    ::setenv("OCL_ICD_VENDORS", r.previous_vendors->c_str(), 1);
  else
    ::unsetenv("OCL_ICD_VENDORS");
  r.dir.clear();
  r.previous_vendors.reset();
}

}  // namespace hetflow::detail
