#pragma once
// Runs a shell command and captures what it prints (stdout and stderr together).
#include <sys/wait.h>

#include <array>
#include <cstdio>
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
}  // namespace test
