/* Is host memory pinned by one OpenCL context pinned for another? A loop over several devices
 * (include/hetflow/parallel_for.hpp) gives each further device a tile over the home tile's host
 * image, which is a CL_MEM_ALLOC_HOST_PTR buffer mapped in the *home* device's context; every
 * H2D of a loop's reads to another device copies from there. On NVIDIA each context is its own
 * CUDA context, and page-locked memory may count as pinned only in the one that allocated it.
 * This times a blocking clEnqueueWriteBuffer of BYTES into a device buffer of context B (device
 * B) from:
 *   pinned-A       an ALLOC_HOST_PTR buffer mapped in context A (another device's context)
 *   pinned-B       an ALLOC_HOST_PTR buffer mapped in context B itself
 *   malloc         plain malloc'd memory (pageable)
 *   pinned-A+use   pinned-A after a CL_MEM_USE_HOST_PTR buffer of context B was made over it
 *   copy-use       clEnqueueCopyBuffer from that USE_HOST_PTR buffer instead of a write
 * and, as a control, into context A's device from pinned-A. GB/s by the profiling counters, the best
 * of ROUNDS after a warm-up. Plain OpenCL; devices A and B are the first two GPUs of platform P.
 *   cc -O2 cross_context_pinned_probe.c -lOpenCL -o cross_context_pinned_probe
 *   ./cross_context_pinned_probe [MiB=64] [ROUNDS=5] [P=first with two GPUs] */
#include <string.h>

#include "probe_device.h"

static cl_context make_context(cl_device_id d) {
  cl_int err;
  cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
  check(err, "clCreateContext");
  return c;
}

static cl_command_queue make_queue(cl_context c, cl_device_id d) {
  cl_int err;
  cl_command_queue q = clCreateCommandQueue(c, d, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  return q;
}

static void* pinned(cl_context c, cl_command_queue q, size_t bytes) {
  cl_int err;
  cl_mem b = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
  check(err, "clCreateBuffer(ALLOC_HOST_PTR)");
  void* p = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
  check(err, "clEnqueueMapBuffer");
  memset(p, 1, bytes);
  return p;  // the buffer stays mapped (and leaks) for the process's life
}

static double seconds(cl_event e) {
  cl_ulong s = 0, t = 0;
  check(clWaitForEvents(1, &e), "clWaitForEvents");
  check(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL), "start");
  check(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL), "end");
  clReleaseEvent(e);
  return (double)(t - s) * 1e-9;
}

/* Best GB/s of `rounds` (after one warm-up) writing `bytes` from `src` (or copying from `from`). */
static double rate(cl_command_queue q, cl_mem dst, const void* src, cl_mem from, size_t bytes, int rounds) {
  double best = 1e30;
  for (int r = 0; r <= rounds; ++r) {
    cl_event e;
    if (from)
      check(clEnqueueCopyBuffer(q, from, dst, 0, 0, bytes, 0, NULL, &e), "clEnqueueCopyBuffer");
    else
      check(clEnqueueWriteBuffer(q, dst, CL_TRUE, 0, bytes, src, 0, NULL, &e), "clEnqueueWriteBuffer");
    const double s = seconds(e);
    if (r > 0 && s < best) best = s;
  }
  return (double)bytes / best * 1e-9;
}

int main(int argc, char** argv) {
  const size_t bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
  const int rounds = argc > 2 ? atoi(argv[2]) : 5;
  cl_platform_id plats[8];
  cl_uint np = 0;
  check(clGetPlatformIDs(8, plats, &np), "clGetPlatformIDs");
  cl_device_id devs[2];
  cl_uint nd = 0;
  for (cl_uint p = 0; p < np && nd < 2; ++p) {
    if (argc > 3 && (cl_uint)atoi(argv[3]) != p) continue;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_GPU, 2, devs, &nd) != CL_SUCCESS) nd = 0;
  }
  if (nd < 2) {
    fprintf(stderr, "cross_context_pinned_probe: no platform with two GPUs\n");
    return 2;
  }
  char name[256];
  clGetDeviceInfo(devs[1], CL_DEVICE_NAME, sizeof name, name, NULL);
  cl_context ca = make_context(devs[0]), cb = make_context(devs[1]);
  cl_command_queue qa = make_queue(ca, devs[0]), qb = make_queue(cb, devs[1]);
  cl_int err;
  cl_mem da = clCreateBuffer(ca, CL_MEM_READ_WRITE, bytes, NULL, &err);
  check(err, "clCreateBuffer A");
  cl_mem db = clCreateBuffer(cb, CL_MEM_READ_WRITE, bytes, NULL, &err);
  check(err, "clCreateBuffer B");
  void* pin_a = pinned(ca, qa, bytes);
  void* pin_b = pinned(cb, qb, bytes);
  void* heap = malloc(bytes);
  memset(heap, 1, bytes);
  printf("cross_context_pinned_probe: %zu MiB into device B (%s), one context per device; GB/s, best of %d\n",
         bytes >> 20, name, rounds);
  printf("%-28s %8.2f\n", "A's device from pinned-A", rate(qa, da, pin_a, NULL, bytes, rounds));
  printf("%-28s %8.2f\n", "B's device from pinned-A", rate(qb, db, pin_a, NULL, bytes, rounds));
  printf("%-28s %8.2f\n", "B's device from pinned-B", rate(qb, db, pin_b, NULL, bytes, rounds));
  printf("%-28s %8.2f\n", "B's device from malloc", rate(qb, db, heap, NULL, bytes, rounds));
  cl_mem use = clCreateBuffer(cb, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, bytes, pin_a, &err);
  check(err, "clCreateBuffer(USE_HOST_PTR over pinned-A)");
  printf("%-28s %8.2f\n", "B's device from pinned-A+use", rate(qb, db, pin_a, NULL, bytes, rounds));
  printf("%-28s %8.2f\n", "B's device copy-use", rate(qb, db, NULL, use, bytes, rounds));
  return 0;
}
