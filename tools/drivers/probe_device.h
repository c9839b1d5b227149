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
