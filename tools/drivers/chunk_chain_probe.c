/* What does a chain of small device chunks cost per chunk, and which of a task engine's habits adds
 * to it? Each chunk: a kernel over CHUNK floats at a global offset (y = 2x + 1) and a read of its
 * region back into pinned memory; the next chunk's kernel is enqueued once the host knows the
 * kernel (or the read) ended. Variants add, one at a time, what hetflow's loop does:
 *   raw        kernel without an event, read with one, clWaitForEvents(read)  (the hand-written loop)
 *   kevent0    the kernel returns an event, on a queue without profiling (read on it too)
 *   kevent     the kernel returns an event, on a profiling queue (this and every later variant)
 *   2queues    the read on a second queue, waiting on the kernel's event (a flush first)
 *   callbacks  2queues + clSetEventCallback (no-op) on the kernel's and the read's events
 *   pollk      callbacks + the next kernel goes on at the kernel's end, seen by polling its status
 *              every 20 us (sleeping); the read is waited for only at the end
 *   spink      as pollk, polling with sched_yield in between
 * Rounds alternate the variants. Prints the median us per chunk, and the median us the host spent
 * inside clEnqueueNDRangeKernel and inside the read's enqueue.
 *   cc -O2 chunk_chain_probe.c -lOpenCL -lpthread -o chunk_chain_probe && ./chunk_chain_probe [CHUNKS=256] [CHUNK=4096]
 * [ROUNDS=5] Picks the first GPU, else the first device (HETFLOW-free: plain OpenCL). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_device.h"

static void CL_CALLBACK noop(cl_event e, cl_int s, void* d) { (void)e, (void)s, (void)d; }
static cl_int status_of(cl_event e) {
  cl_int s = CL_QUEUED;
  check(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL), "clGetEventInfo");
  return s;
}

enum { RAW, KEVENT0, KEVENT, TWOQ, CALLBACKS, POLLK, SPINK, NVAR };
static const char* names[NVAR] = {"raw", "kevent0", "kevent", "2queues", "callbacks", "pollk", "spink"};

int main(int argc, char** argv) {
  const int chunks = argc > 1 ? atoi(argv[1]) : 256;
  const size_t chunk = argc > 2 ? (size_t)atoll(argv[2]) : 4096;
  const int rounds = argc > 3 ? atoi(argv[3]) : 5;
  const size_t n = chunk * (size_t)chunks;
  cl_int err;
  cl_device_id dev = probe_device(-1);
  char dname[256] = "";
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL);
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  check(err, "clCreateContext");
  cl_command_queue kq = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  cl_command_queue plain_q = clCreateCommandQueue(ctx, dev, 0, &err);
  check(err, "clCreateCommandQueue");
  cl_command_queue rq = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  const char* src =
      "kernel void affine(global const float* x, global float* y, ulong end) {"
      "  size_t i = get_global_id(0); if (i < end) y[i] = 2.0f * x[i] + 1.0f; }";
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  check(err, "clCreateProgramWithSource");
  check(clBuildProgram(prog, 1, &dev, "", NULL, NULL), "clBuildProgram");
  cl_kernel k = clCreateKernel(prog, "affine", &err);
  check(err, "clCreateKernel");
  cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_ONLY, n * 4, NULL, &err);
  check(err, "clCreateBuffer");
  cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
  check(err, "clCreateBuffer");
  cl_mem pinned = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n * 4, NULL, &err);
  check(err, "clCreateBuffer");
  float* host = clEnqueueMapBuffer(kq, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n * 4, 0, NULL, NULL, &err);
  check(err, "clEnqueueMapBuffer");
  for (size_t i = 0; i < n; ++i) host[i] = 1.0f;
  check(clEnqueueWriteBuffer(kq, x, CL_TRUE, 0, n * 4, host, 0, NULL, NULL), "write x");
  check(clSetKernelArg(k, 0, sizeof x, &x), "arg 0");
  check(clSetKernelArg(k, 1, sizeof y, &y), "arg 1");

  double* per_chunk[NVAR];
  double* enq_k[NVAR];
  double* enq_r[NVAR];
  for (int v = 0; v < NVAR; ++v) {
    per_chunk[v] = calloc((size_t)rounds, sizeof(double));
    enq_k[v] = calloc((size_t)(rounds * chunks), sizeof(double));
    enq_r[v] = calloc((size_t)(rounds * chunks), sizeof(double));
  }
  cl_event* reads = calloc((size_t)chunks, sizeof(cl_event));
  for (int round = -1; round < rounds; ++round) { /* round -1: warm-up */
    for (int v = 0; v < NVAR; ++v) {
      const int two = v >= TWOQ, cb = v >= CALLBACKS, onkernel = v >= POLLK;
      cl_command_queue kernel_q = v == KEVENT0 ? plain_q : kq;
      cl_command_queue read_q = two ? rq : kernel_q;
      const double t0 = now_us();
      for (int c = 0; c < chunks; ++c) {
        const size_t b = (size_t)c * chunk;
        const cl_ulong e = b + chunk;
        cl_event kev = NULL;
        double a = now_us();
        check(clSetKernelArg(k, 2, sizeof e, &e), "arg 2");
        check(clEnqueueNDRangeKernel(kernel_q, k, 1, &b, &chunk, NULL, 0, NULL, v == RAW ? NULL : &kev), "kernel");
        double bt = now_us();
        if (round >= 0) enq_k[v][round * chunks + c] = bt - a;
        if (two) check(clFlush(kq), "clFlush");
        a = now_us();
        check(clEnqueueReadBuffer(read_q, y, CL_FALSE, b * 4, chunk * 4, host + b, two ? 1 : 0, two ? &kev : NULL,
                                  &reads[c]),
              "read");
        bt = now_us();
        if (round >= 0) enq_r[v][round * chunks + c] = bt - a;
        if (cb) {
          check(clSetEventCallback(kev, CL_COMPLETE, noop, NULL), "callback");
          check(clSetEventCallback(reads[c], CL_COMPLETE, noop, NULL), "callback");
        }
        if (two) check(clFlush(rq), "clFlush");
        if (!onkernel) {
          check(clWaitForEvents(1, &reads[c]), "wait");
        } else {
          while (status_of(kev) > CL_COMPLETE) {
            if (v == SPINK) {
              sched_yield();
            } else {
              struct timespec s = {0, 20000};
              nanosleep(&s, NULL);
            }
          }
        }
        if (kev) clReleaseEvent(kev);
        if (!onkernel) clReleaseEvent(reads[c]);
      }
      if (onkernel) {
        check(clWaitForEvents((cl_uint)chunks, reads), "wait reads");
        for (int c = 0; c < chunks; ++c) clReleaseEvent(reads[c]);
      }
      if (round >= 0) per_chunk[v][round] = (now_us() - t0) / chunks;
    }
  }
  printf("chunk_chain_probe on %s: %d chunks of %zu, median of %d rounds\n", dname, chunks, chunk, rounds);
  printf("%-10s %12s %16s %16s\n", "variant", "us/chunk", "kernel enqueue", "read enqueue");
  for (int v = 0; v < NVAR; ++v)
    printf("%-10s %12.2f %16.2f %16.2f\n", names[v], median(per_chunk[v], rounds), median(enq_k[v], rounds * chunks),
           median(enq_r[v], rounds * chunks));
  return 0;
}
