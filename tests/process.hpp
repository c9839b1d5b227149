#pragma once
// Runs a shell command and captures what it prints (stdout and stderr together).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace test {
struct CommandResult {
  int status = -1;
  std::string output;
};
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), int(buf.size()), pipe)) r.output += buf.data();
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// A program of this project: beside the running test when the two were carried elsewhere together
// (the GPU host's bundle), else where the build put it.
inline std::string program_beside_or(const char* name, const std::string& built) {
  std::error_code ec;
  const auto beside = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / name;
  return !ec && std::filesystem::exists(beside) ? beside.string() : built;
}
}  // namespace test
