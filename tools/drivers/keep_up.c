/* A device that keeps up with the stream, for profiling on one that does not: an LD_PRELOAD
 * library whose clGetEventInfo, asked for a command's execution status, first waits for that
 * command (clWaitForEvents). On the H200 the device finishes a 4-byte transfer before the next
 * few are enqueued, so the engine's settling probe (StreamingStep::settle_ended) finds its command
 * ended and settles every one ahead at once; under valgrind PoCL's CPU device lags far behind and
 * the probe finds it running, so without this the profile follows another path than the H200's.
 * perf/callgrind-per-request.sh builds and preloads it for its `nvidia` path.
 *   cc -O2 -shared -fPIC keep_up.c -ldl -o keep_up.so
 *   HETFLOW_QUEUE_ORDER=in-order LD_PRELOAD=$PWD/keep_up.so bench_request_stream transfer 60000 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>

cl_int clGetEventInfo(cl_event e, cl_event_info what, size_t size, void* value, size_t* size_ret) {
  static __typeof__(&clGetEventInfo) next;
  static __typeof__(&clWaitForEvents) wait;
  if (!next) {
    next = (__typeof__(&clGetEventInfo))dlsym(RTLD_NEXT, "clGetEventInfo");
    wait = (__typeof__(&clWaitForEvents))dlsym(RTLD_NEXT, "clWaitForEvents");
  }
  /* A failed command's wait returns its error; the status query below still reports it. */
  if (what == CL_EVENT_COMMAND_EXECUTION_STATUS) (void)wait(1, &e);
  return next(e, what, size, value, size_ret);
}
