/* What the plain-OpenCL driver probes share (the .c files beside this one): failing loudly on an OpenCL error,
 * and which device they measure. */
#pragma once
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) {
    fprintf(stderr, "%s failed: %d\n", what, err);
    exit(1);
  }
}

/* Platform `platform`'s first device; with platform < 0, the first GPU of any platform, else the
 * first device of any. Exits when there is none. */
static cl_device_id probe_device(int platform) {
  cl_platform_id plats[8];
  cl_uint np = 0;
  check(clGetPlatformIDs(8, plats, &np), "clGetPlatformIDs");
  cl_device_id dev = NULL;
  if (platform >= 0) {
    if ((cl_uint)platform >= np) check(CL_INVALID_PLATFORM, "platform index");
    check(clGetDeviceIDs(plats[platform], CL_DEVICE_TYPE_ALL, 1, &dev, NULL), "clGetDeviceIDs");
    return dev;
  }
  for (cl_uint p = 0; p < np && !dev; ++p)
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;
  for (cl_uint p = 0; p < np && !dev; ++p)
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;
  if (!dev) check(CL_DEVICE_NOT_FOUND, "no OpenCL device: clGetDeviceIDs");
  return dev;
}

/* Monotonic wall time in microseconds. */
static inline double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
/* qsort's comparison of doubles, and the median of n of them (sorts v). */
static inline int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static inline double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

/* What the empty-kernel streams share (live_events_probe.c, event_cost_probe.c): the device
 * probe_device(-1) picks and its name, a context and an in-order queue without profiling on it, the
 * kernel `empty_kernel(global float*)` that does nothing, and a 4-byte buffer set as its argument. */
struct empty_kernel_setup {
  char name[256];
  cl_context ctx;
  cl_command_queue q;
  cl_kernel k;
  cl_mem buf;
};
static inline struct empty_kernel_setup probe_empty_kernel(void) {
  struct empty_kernel_setup s;
  cl_device_id dev = probe_device(-1);
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof s.name, s.name, NULL);
  cl_int err;
  s.ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  check(err, "clCreateContext");
  s.q = clCreateCommandQueue(s.ctx, dev, 0, &err);
  check(err, "clCreateCommandQueue");
  const char* src = "kernel void empty_kernel(global float* x) { (void)x; }";
  cl_program p = clCreateProgramWithSource(s.ctx, 1, &src, NULL, &err);
  check(err, "clCreateProgramWithSource");
  check(clBuildProgram(p, 1, &dev, "", NULL, NULL), "clBuildProgram");
  s.k = clCreateKernel(p, "empty_kernel", &err);
  check(err, "clCreateKernel");
  s.buf = clCreateBuffer(s.ctx, CL_MEM_READ_WRITE, 4, NULL, &err);
  check(err, "clCreateBuffer");
  check(clSetKernelArg(s.k, 0, sizeof s.buf, &s.buf), "clSetKernelArg");
  return s;
}
