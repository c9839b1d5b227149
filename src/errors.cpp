#include <hetflow/errors.hpp>

namespace hetflow {

OpenCLError::OpenCLError(cl_int code_, const std::string& what_failed)
    : Error(what_failed + " failed: " + cl_error_name(code_)), code(code_), name(cl_error_name(code_)) {}

BuildError::BuildError(std::string device_, std::string file_, std::string log_)
    : Error("OpenCL build of '" + file_ + "' failed on device '" + device_ + "':\n" + log_),
      device(std::move(device_)),
      file(std::move(file_)),
      log(std::move(log_)) {}

namespace {
std::string describe(const std::vector<FailedRequest>& fs) {
  // A long program's failure cancels thousands behind it: a what() of 3,000 lines (412 KB) buries the
  // failure that matters, so the failed ones come first and the list stops at kListed lines;
  // failures() keeps every one.
  constexpr std::size_t kListed = 20;
  std::string msg = std::to_string(fs.size()) + " request(s) failed or were cancelled:";
  std::size_t listed = 0;
  for (const bool cancelled : {false, true})
    for (const auto& f : fs) {
      if (f.cancelled != cancelled || listed == kListed) continue;
      msg += "\n  " + (f.id ? "request #" + std::to_string(f.id) + " " : std::string()) + f.kind + " '" + f.name +
             "' " + (f.cancelled ? "cancelled" : "failed") + ": " + f.cause;
      ++listed;
    }
  if (listed < fs.size())
    msg += "\n  ... and " + std::to_string(fs.size() - listed) + " more (failures() lists every one)";
  return msg;
}
}  // namespace

RequestFailed::RequestFailed(std::vector<FailedRequest> failures)
    : Error(describe(failures)), failures_(std::move(failures)) {}

DeviceLost::DeviceLost(std::string reason, std::vector<FailedRequest> failures)
    : Error(failures.empty() ? reason : reason + "\n" + describe(failures)),
      reason_(std::move(reason)),
      failures_(std::move(failures)) {}

const char* cl_error_name(cl_int code) {
  switch (code) {
#define HETFLOW_CL_CASE(x) \
  case x:                  \
    return #x;
    HETFLOW_CL_CASE(CL_SUCCESS)
    HETFLOW_CL_CASE(CL_DEVICE_NOT_FOUND)
    HETFLOW_CL_CASE(CL_DEVICE_NOT_AVAILABLE)
    HETFLOW_CL_CASE(CL_COMPILER_NOT_AVAILABLE)
    HETFLOW_CL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    HETFLOW_CL_CASE(CL_OUT_OF_RESOURCES)
    HETFLOW_CL_CASE(CL_OUT_OF_HOST_MEMORY)
    HETFLOW_CL_CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
    HETFLOW_CL_CASE(CL_MEM_COPY_OVERLAP)
    HETFLOW_CL_CASE(CL_IMAGE_FORMAT_MISMATCH)
    HETFLOW_CL_CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    HETFLOW_CL_CASE(CL_BUILD_PROGRAM_FAILURE)
    HETFLOW_CL_CASE(CL_MAP_FAILURE)
    HETFLOW_CL_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    HETFLOW_CL_CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    HETFLOW_CL_CASE(CL_COMPILE_PROGRAM_FAILURE)
    HETFLOW_CL_CASE(CL_LINKER_NOT_AVAILABLE)
    HETFLOW_CL_CASE(CL_LINK_PROGRAM_FAILURE)
    HETFLOW_CL_CASE(CL_DEVICE_PARTITION_FAILED)
    HETFLOW_CL_CASE(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    HETFLOW_CL_CASE(CL_INVALID_VALUE)
    HETFLOW_CL_CASE(CL_INVALID_DEVICE_TYPE)
    HETFLOW_CL_CASE(CL_INVALID_PLATFORM)
    HETFLOW_CL_CASE(CL_INVALID_DEVICE)
    HETFLOW_CL_CASE(CL_INVALID_CONTEXT)
    HETFLOW_CL_CASE(CL_INVALID_QUEUE_PROPERTIES)
    HETFLOW_CL_CASE(CL_INVALID_COMMAND_QUEUE)
    HETFLOW_CL_CASE(CL_INVALID_HOST_PTR)
    HETFLOW_CL_CASE(CL_INVALID_MEM_OBJECT)
    HETFLOW_CL_CASE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    HETFLOW_CL_CASE(CL_INVALID_IMAGE_SIZE)
    HETFLOW_CL_CASE(CL_INVALID_SAMPLER)
    HETFLOW_CL_CASE(CL_INVALID_BINARY)
    HETFLOW_CL_CASE(CL_INVALID_BUILD_OPTIONS)
    HETFLOW_CL_CASE(CL_INVALID_PROGRAM)
    HETFLOW_CL_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    HETFLOW_CL_CASE(CL_INVALID_KERNEL_NAME)
    HETFLOW_CL_CASE(CL_INVALID_KERNEL_DEFINITION)
    HETFLOW_CL_CASE(CL_INVALID_KERNEL)
    HETFLOW_CL_CASE(CL_INVALID_ARG_INDEX)
    HETFLOW_CL_CASE(CL_INVALID_ARG_VALUE)
    HETFLOW_CL_CASE(CL_INVALID_ARG_SIZE)
    HETFLOW_CL_CASE(CL_INVALID_KERNEL_ARGS)
    HETFLOW_CL_CASE(CL_INVALID_WORK_DIMENSION)
    HETFLOW_CL_CASE(CL_INVALID_WORK_GROUP_SIZE)
    HETFLOW_CL_CASE(CL_INVALID_WORK_ITEM_SIZE)
    HETFLOW_CL_CASE(CL_INVALID_GLOBAL_OFFSET)
    HETFLOW_CL_CASE(CL_INVALID_EVENT_WAIT_LIST)
    HETFLOW_CL_CASE(CL_INVALID_EVENT)
    HETFLOW_CL_CASE(CL_INVALID_OPERATION)
    HETFLOW_CL_CASE(CL_INVALID_GL_OBJECT)
    HETFLOW_CL_CASE(CL_INVALID_BUFFER_SIZE)
    HETFLOW_CL_CASE(CL_INVALID_MIP_LEVEL)
    HETFLOW_CL_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
    HETFLOW_CL_CASE(CL_INVALID_PROPERTY)
    HETFLOW_CL_CASE(CL_INVALID_IMAGE_DESCRIPTOR)
    HETFLOW_CL_CASE(CL_INVALID_COMPILER_OPTIONS)
    HETFLOW_CL_CASE(CL_INVALID_LINKER_OPTIONS)
    HETFLOW_CL_CASE(CL_INVALID_DEVICE_PARTITION_COUNT)
    HETFLOW_CL_CASE(CL_INVALID_PIPE_SIZE)
    HETFLOW_CL_CASE(CL_INVALID_DEVICE_QUEUE)
    HETFLOW_CL_CASE(CL_INVALID_SPEC_ID)
    HETFLOW_CL_CASE(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#undef HETFLOW_CL_CASE
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default: {
      thread_local std::string unknown;
      unknown = "CL_ERROR(" + std::to_string(code) + ")";
      return unknown.c_str();
    }
  }
}

}  // namespace hetflow
