/* PoCL < 7.0 aborts when commands of one kernel that differ only in their global offset run at
 * once on its CPU device:
 *   common.c: pocl_release_dlhandle_cache: Assertion `found->ref_count > 0' failed.
 * pocl_check_kernel_dlhandle_cache() picks a compiled work-group function by (kernel hash, local
 * size, grid width, global offset == 0); pocl_release_dlhandle_cache() looks it up again by
 * (kernel hash, local size) only, so with two variants of one kernel in flight a finishing
 * command can release the other one's entry. Fixed upstream by PoCL commit c9ac4c0c3 ("fix
 * dlhandle cache", first in v7.0). Plain OpenCL, no hetflow; docs/drivers.md cites it.
 * The first launches of a process meet it (PoCL 3.1 also leaks a reference per launch, which
 * hides it later), so run it often:
 *   cc -O2 pocl_dlhandle_race.c -lOpenCL -o race && for i in $(seq 300); do ./race; done
 * On the project's 2-core machine with PoCL 3.1, 2 of 300 and 1 of 300 runs aborted (2026-11-23);
 * exit status 0: no abort and every value right. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                           \
  do {                                     \
    cl_int e_ = (x);                       \
    if (e_ != CL_SUCCESS) {                \
      fprintf(stderr, "%s: %d\n", #x, e_); \
      return 1;                            \
    }                                      \
  } while (0)

static const char* source = "kernel void bump(global float* a) { a[get_global_id(0)] = (float)get_global_id(0); }";

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 40;
  const size_t band = 1 << 16, bands = 4;
  cl_platform_id platforms[8];
  cl_uint np = 0;
  CHECK(clGetPlatformIDs(8, platforms, &np));
  cl_device_id dev = NULL;
  for (cl_uint i = 0; i < np && !dev; ++i)
    if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_CPU, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;
  if (!dev) {
    fprintf(stderr, "no OpenCL CPU device\n");
    return 2;
  }
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  CHECK(err);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  CHECK(err);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
  CHECK(err);
  CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
  cl_kernel k = clCreateKernel(prog, "bump", &err);
  CHECK(err);
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, band * bands * sizeof(float), NULL, &err);
  CHECK(err);
  const float zero = 0.0f;
  CHECK(clEnqueueFillBuffer(q, buf, &zero, sizeof zero, 0, band * bands * sizeof(float), 0, NULL, NULL));
  CHECK(clFinish(q)); /* the queue is out of order */
  CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
  for (int s = 0; s < steps; ++s) {
    /* Independent launches of one kernel on the bands of one buffer: offset 0, band, 2 band, ... */
    for (size_t i = 0; i < bands; ++i) {
      const size_t b = (i + (size_t)s) % bands; /* the zero-offset launch comes first, second, ... */
      const size_t offset = b * band;
      CHECK(clEnqueueNDRangeKernel(q, k, 1, &offset, &band, NULL, 0, NULL, NULL));
    }
  }
  CHECK(clFinish(q));
  float* a = malloc(band * bands * sizeof(float));
  CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, band * bands * sizeof(float), a, 0, NULL, NULL));
  size_t wrong = 0;
  for (size_t i = 0; i < band * bands; ++i) wrong += a[i] != (float)i;
  printf("%d steps of %zu launches, no abort, %zu of %zu values wrong\n", steps, bands, wrong, band * bands);
  return wrong == 0 ? 0 : 1;
}
