#include "commands.hpp"

namespace hetflow::cli {

void write_requested_dumps(const hetflow::Controller& c, const std::string& dump, const std::string& trace) {
  (void)c;
  (void)dump;
  (void)trace;
}

}  // namespace hetflow::cli
