#pragma once
// Every environment variable hetflow reads: its name, what it accepts, its default and what it
// does. A malformed value is a UsageError naming the variable and the values it accepts — from
// Controller's constructor, from check_environment(), and from `hetflow` at start-up.
#include <string>
#include <vector>

namespace hetflow {

struct Setting {
  const char* name;      // e.g. "HETFLOW_POLICY"
  const char* accepts;   // e.g. "async | sync"
  const char* fallback;  // what applies when it is unset or empty
  const char* meaning;
};

// In the order the README's configuration table lists them (a test checks the two agree).
const std::vector<Setting>& environment_settings();

// Parses every variable that is set; throws UsageError for the first malformed one.
void check_environment();

}  // namespace hetflow
