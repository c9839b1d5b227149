#pragma once
// Runs a shell command and captures what it prints (stdout and stderr together).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

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

// Starts argv[0] (looked up on PATH) with SIGINT and SIGTERM at their default actions, as a terminal
// would start it (a shell's background job starts with SIGINT ignored), with `env` ("NAME=value")
// set over this process's environment and stdout and stderr into `log`. The caller waits for it.
inline pid_t start_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                           const std::string& log) {
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    bool replaced = false;
    for (const auto& v : env) replaced |= var.compare(0, v.find('=') + 1, v, 0, v.find('=') + 1) == 0;
    if (!replaced) vars.push_back(var);
  }
  vars.insert(vars.end(), env.begin(), env.end());
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& v : vars) envp.push_back(const_cast<char*>(v.c_str()));
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  if (::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return pid;
}

// waitpid's status for `pid`, through interruptions.
inline int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}
}  // namespace test
