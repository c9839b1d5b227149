/* What an OpenCL GPU driver does when a kernel faults (writes far out of bounds), in plain OpenCL,
 * so the engine's handling (docs/drivers.md, "Device faults") rests on observed behaviour:
 * the event's status seen by a poll, by clWaitForEvents and by a completion callback; what later
 * calls on the same context return; whether a new context on the same device works.
 *   cc -O2 device_fault_probe.c -lOpenCL -o probe && ./probe [wait|poll|callback]
 * Picks the first GPU. Prints one line per observation; exit status 0 unless the probe itself
 * could not run. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char* source =
    "kernel void oob(global int* x) { x[get_global_id(0) + 100000000] = 1; }\n"
    "kernel void fill(global int* x, int v) { x[get_global_id(0)] = v; }\n";

static volatile cl_int callback_status = 1;
static void CL_CALLBACK on_event(cl_event e, cl_int status, void* data) {
  (void)e;
  (void)data;
  callback_status = status;
}

/* A healthy round trip on a context: fill 10 ints on the device and read them back. */
static cl_int healthy(cl_context ctx, cl_device_id dev, const char* label) {
  cl_int err;
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  printf("%s: clCreateCommandQueue %d\n", label, err);
  if (err) return err;
  cl_program p = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
  err = clBuildProgram(p, 1, &dev, "", NULL, NULL);
  printf("%s: clBuildProgram %d\n", label, err);
  if (err) return err;
  cl_kernel k = clCreateKernel(p, "fill", &err);
  cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 40, NULL, &err);
  printf("%s: clCreateBuffer %d\n", label, err);
  int v = 7, out[10] = {0};
  clSetKernelArg(k, 0, sizeof b, &b);
  clSetKernelArg(k, 1, sizeof v, &v);
  size_t g = 10;
  err = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
  printf("%s: clEnqueueNDRangeKernel %d\n", label, err);
  err = clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
  printf("%s: blocking clEnqueueReadBuffer %d, out[9] = %d (want 7)\n", label, err, out[9]);
  clReleaseMemObject(b);
  clReleaseKernel(k);
  clReleaseProgram(p);
  clReleaseCommandQueue(q);
  return err;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "wait";
  cl_platform_id platforms[8];
  cl_uint np = 0;
  if (clGetPlatformIDs(8, platforms, &np) != CL_SUCCESS) return 2;
  cl_device_id dev = NULL;
  for (cl_uint i = 0; i < np && !dev; ++i)
    if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;
  if (!dev) {
    fprintf(stderr, "no OpenCL GPU\n");
    return 2;
  }
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
  cl_program p = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
  if (clBuildProgram(p, 1, &dev, "", NULL, NULL) != CL_SUCCESS) return 2;
  cl_kernel k = clCreateKernel(p, "oob", &err);
  cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 40, NULL, &err);
  int host[10] = {0};
  clEnqueueWriteBuffer(q, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL);
  clSetKernelArg(k, 0, sizeof b, &b);
  size_t g = 1024;
  cl_event ev, after;
  err = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, &ev);
  printf("mode %s: enqueue oob %d\n", mode, err);
  /* A command on another queue waiting for the faulting one, and one on the same queue after it. */
  err = clEnqueueReadBuffer(q2, b, CL_FALSE, 0, sizeof host, host, 1, &ev, &after);
  printf("read after it on another queue: enqueue %d\n", err);
  if (!strcmp(mode, "callback")) printf("clSetEventCallback %d\n", clSetEventCallback(ev, CL_COMPLETE, on_event, NULL));
  clFlush(q);
  clFlush(q2);
  if (!strcmp(mode, "wait")) {
    err = clWaitForEvents(1, &ev);
    printf("clWaitForEvents(oob) %d\n", err);
  } else {
    for (int i = 0; i < 2000; ++i) { /* up to 2 s */
      cl_int s = 1;
      clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
      if (s <= 0 && (strcmp(mode, "callback") || callback_status <= 0)) break;
      usleep(1000);
    }
  }
  cl_int s = 1;
  err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
  printf("oob status %d (query %d), callback status %d\n", s, err, callback_status);
  err = clWaitForEvents(1, &after);
  clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
  printf("read after it: clWaitForEvents %d, status %d\n", err, s);
  printf("clFinish(q) %d, clFinish(q2) %d\n", clFinish(q), clFinish(q2));
  cl_mem b2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4000, NULL, &err);
  printf("clCreateBuffer after %d\n", err);
  cl_event marker;
  err = clEnqueueMarkerWithWaitList(q2, 0, NULL, &marker);
  printf("marker enqueue %d", err);
  if (!err) {
    printf(", clWaitForEvents %d", clWaitForEvents(1, &marker));
    clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    printf(", status %d", s);
  }
  printf("\n");
  err = clEnqueueWriteBuffer(q2, b2, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL);
  printf("blocking write after %d\n", err);
  healthy(ctx, dev, "same context");
  cl_context ctx2 = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  printf("new context %d\n", err);
  if (!err) healthy(ctx2, dev, "new context");
  printf("release: kernel %d, queue %d, context %d\n", clReleaseKernel(k), clReleaseCommandQueue(q),
         clReleaseContext(ctx));
  return 0;
}
