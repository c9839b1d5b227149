#pragma once
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <hetflow/opencl.hpp>

namespace hetflow {

// Every error hetflow throws derives from Error, so `catch (const hetflow::Error&)` takes them all.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The program asked for something that cannot be done (wrong kernel arguments, a region out of
// bounds, a transfer on a device-only tile, a tile of another controller, use after free...).
// Thrown by the submitting call before anything runs.
struct UsageError : Error {
  using Error::Error;
};

// A tile larger than the device allocates at once (CL_DEVICE_MAX_MEM_ALLOC_SIZE): the same
// program may run on a device that allocates more. A UsageError, thrown by the call that makes it.
struct TooLargeForDevice : UsageError {
  using UsageError::UsageError;
};

// No OpenCL platform, or a device selection that matches nothing.
struct DeviceError : Error {
  using Error::Error;
};

// An OpenCL call failed. `code` is the OpenCL status, `name` its symbolic name (CL_INVALID_VALUE...).
struct OpenCLError : Error {
  OpenCLError(cl_int code, const std::string& what_failed);
  cl_int code;
  std::string name;
};

// A .cl program failed to build. The message holds the device, the file and the full build log.
struct BuildError : Error {
  BuildError(std::string device, std::string file, std::string log);
  std::string device;
  std::string file;
  std::string log;
};

// A .cl file was not found on the search path; the message names every directory searched.
struct FileNotFoundError : Error {
  using Error::Error;
};

// One request that failed or was cancelled, as a wait reports it.
// A parallel_for call's failed chunk comes first with kind "chunk" and id 0 (not a request itself),
// after the request that failed where the chunk only waited on it (then the chunk is `cancelled`).
struct FailedRequest {
  std::uint64_t id = 0;  // its number in program order (the "#12" of messages and dumps)
  std::string kind;      // "H2D", "D2H", "kernel", "host" (a host task or an on_ready hook), "free" or "chunk"
  std::string name;      // "move_to(x)", the kernel's name, the host task's name
  std::vector<std::string> tiles;  // the tiles it accesses
  bool cancelled = false;          // not run, because something it depends on failed; else it failed
  std::string cause;               // "threw: ...", "clEnqueueNDRangeKernel failed: CL_...", "not run: request #3 ..."
  std::exception_ptr
      exception;  // what a host task threw, or a chunk's refusal, as thrown (rethrow it to catch its type)
};

// One or more submitted requests failed (OpenCL failure, a host task threw) or were cancelled
// because something they depend on failed. Thrown by wait()/wait_all() while the controller is
// usable (a wait that finds it lost throws DeviceLost, with the same list). what() lists the
// failed ones first, then the cancelled ones, 20 at most, and says how many more failures() holds.
struct RequestFailed : Error {
  explicit RequestFailed(std::vector<FailedRequest> failures);
  const std::vector<FailedRequest>& failures() const { return failures_; }

 private:
  std::vector<FailedRequest> failures_;
};

// The controller's device context is gone: a device command faulted (a kernel wrote out of bounds,
// say) and the driver invalidated the context (NVIDIA does), so nothing more can run on it. Every
// request, tile and wait of that controller throws this from then on, starting with the wait that
// finds the controller lost — the one that discovers the fault, since a fault shows only in its
// command's status — so a program learns at once that retrying is pointless. what() names the
// first fault, then lists failures(). Host images of its tiles stay readable; the destructor
// returns. Make a new Controller (docs/drivers.md, "Device faults").
// Not a RequestFailed: a handler written for a usable controller (report, fix the input, go on)
// would retry on a dead one. Catch DeviceLost first where both are handled.
struct DeviceLost : Error {
  explicit DeviceLost(std::string reason, std::vector<FailedRequest> failures = {});
  // What a wait reports: the requests it would have thrown RequestFailed for (the faulting command
  // and what it cancelled), each reported once, as RequestFailed::failures() would be. Filled by
  // wait(t) and wait_all() (and a parallel_for call) only, as only they report failures: from any
  // other call it is empty — a refused request, or under sync a blocking request whose own wait
  // found the loss — and the failures stay for the next wait, which throws DeviceLost with them.
  const std::vector<FailedRequest>& failures() const { return failures_; }
  // what() without the failures' list: why the context is gone.
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
  std::vector<FailedRequest> failures_;
};

// The symbolic name of an OpenCL status code ("CL_OUT_OF_RESOURCES"), or "CL_ERROR(<n>)".
const char* cl_error_name(cl_int code);

}  // namespace hetflow
