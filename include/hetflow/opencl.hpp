// The one place that includes the Khronos C++ bindings, so the library and its users agree on the
// OpenCL version macros (a mismatch changes the bindings' class layouts).
#pragma once
#ifndef CL_HPP_TARGET_OPENCL_VERSION
#define CL_HPP_TARGET_OPENCL_VERSION 300
#endif
#ifndef CL_HPP_MINIMUM_OPENCL_VERSION
#define CL_HPP_MINIMUM_OPENCL_VERSION \
  110  // 120 trips a bug of the 2023.02 bindings (getContextPlatformVersion undefined)
#endif
#ifndef CL_HPP_ENABLE_EXCEPTIONS
#define CL_HPP_ENABLE_EXCEPTIONS
#endif
#include <CL/opencl.hpp>
