#pragma once
// OpenCL's C++ bindings throw cl::Error; every error a user can catch is a hetflow::Error. Calls
// through the bindings go through cl_call, which turns one into an OpenCLError naming what failed
// and the OpenCL call that reported it.
#include <hetflow/errors.hpp>

#include <string>

namespace hetflow::detail {

template <class F>
auto cl_call(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const cl::Error& e) {
    throw OpenCLError(e.err(), what + " (" + e.what() + ")");
  }
}

}  // namespace hetflow::detail
