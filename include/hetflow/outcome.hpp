#pragma once
// What a completion hook (Controller::on_ready) is told about the requests it waited for.
#include <string>

namespace hetflow {

struct Outcome {
  // Empty when every request the hook waited for succeeded; else why not, naming the first that failed
  // or was cancelled: "request #12 'sobel_rows' that it depends on failed".
  std::string error;
  bool ok() const { return error.empty(); }
};

}  // namespace hetflow
