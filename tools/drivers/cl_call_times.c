/* How many of the driver's calls a program makes per enqueue, and how long each takes there: an
 * LD_PRELOAD library that wraps clGetEventInfo, clReleaseEvent, clRetainEvent, clFlush,
 * clWaitForEvents, clEnqueueWriteBuffer and clEnqueueReadBuffer, and prints at exit, per transfer
 * enqueued, how many of each were made and their mean time. Subtracting the calls' time from a
 * stream's time per request leaves what the program itself spent around them: how perf/RESULTS.md
 * (2026-11-29) split hetflow's 4-byte transfers on the H200 into the driver's work and the
 * engine's, where the host has no perf.
 *   cc -O2 -shared -fPIC cl_call_times.c -ldl -o cl_call_times.so
 *   LD_PRELOAD=$PWD/cl_call_times.so bench_request_stream transfer 100000
 * Status queries that found the command not yet complete are also counted apart. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

enum { GET_INFO, RELEASE, RETAIN, FLUSH, WAIT, WRITE, READ, CALLS };
static const char* names[CALLS] = {"clGetEventInfo",  "clReleaseEvent",       "clRetainEvent",      "clFlush",
                                   "clWaitForEvents", "clEnqueueWriteBuffer", "clEnqueueReadBuffer"};
static _Atomic long long count[CALLS], spent[CALLS], running_queries, running_spent;

/* Counts one call begun at `since`; returns how long it took. */
static long long note(int call, long long since) {
  const long long took = now_ns() - since;
  atomic_fetch_add(&spent[call], took);
  atomic_fetch_add(&count[call], 1);
  return took;
}

/* The next definition of `name` (the ICD loader's), looked up once. */
#define NEXT(name)               \
  static __typeof__(&name) next; \
  if (!next) next = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

/* The body of a wrapper: the next definition called with the wrapper's arguments, timed as `call`. */
#define TIMED(call, name, ...)          \
  NEXT(name);                           \
  const long long t0 = now_ns();        \
  const cl_int err = next(__VA_ARGS__); \
  note(call, t0);                       \
  return err

cl_int clGetEventInfo(cl_event e, cl_event_info what, size_t size, void* value, size_t* size_ret) {
  NEXT(clGetEventInfo);
  const long long t0 = now_ns();
  const cl_int err = next(e, what, size, value, size_ret);
  const long long took = note(GET_INFO, t0);
  if (err == CL_SUCCESS && what == CL_EVENT_COMMAND_EXECUTION_STATUS && value && *(cl_int*)value > CL_COMPLETE) {
    atomic_fetch_add(&running_queries, 1);
    atomic_fetch_add(&running_spent, took);
  }
  return err;
}

cl_int clReleaseEvent(cl_event e) { TIMED(RELEASE, clReleaseEvent, e); }

cl_int clRetainEvent(cl_event e) { TIMED(RETAIN, clRetainEvent, e); }

cl_int clFlush(cl_command_queue q) { TIMED(FLUSH, clFlush, q); }

cl_int clWaitForEvents(cl_uint n, const cl_event* list) { TIMED(WAIT, clWaitForEvents, n, list); }

cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem b, cl_bool blocking, size_t offset, size_t size,
                            const void* host, cl_uint n, const cl_event* list, cl_event* e) {
  TIMED(WRITE, clEnqueueWriteBuffer, q, b, blocking, offset, size, host, n, list, e);
}

cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem b, cl_bool blocking, size_t offset, size_t size, void* host,
                           cl_uint n, const cl_event* list, cl_event* e) {
  TIMED(READ, clEnqueueReadBuffer, q, b, blocking, offset, size, host, n, list, e);
}

__attribute__((destructor)) static void report(void) {
  long long transfers = count[WRITE] + count[READ];
  if (transfers == 0) transfers = 1;
  fprintf(stderr, "cl_call_times: %lld transfers enqueued;", count[WRITE] + count[READ]);
  for (int i = 0; i < CALLS; ++i)
    if (count[i])
      fprintf(stderr, " %s %.3f a transfer, %.2f us each;", names[i], (double)count[i] / transfers,
              spent[i] / 1e3 / count[i]);
  if (running_queries)
    fprintf(stderr, " of the status queries, %.3f a transfer found it running, %.2f us each",
            (double)running_queries / transfers, running_spent / 1e3 / running_queries);
  fprintf(stderr, "\n");
}
