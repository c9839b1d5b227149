/* How soon, and at what CPU cost, does a host thread learn that a device command ended? One
 * in-order queue; a kernel that runs about `work` iterations of a loop in one work-item; the host
 * enqueues it, flushes, learns of its end one of four ways, and enqueues the next:
 *   spin      clGetEventInfo status in a loop (the floor; burns a core)
 *   wait      clWaitForEvents (does the driver block or spin inside? the CPU column says)
 *   callback  clSetEventCallback(CL_COMPLETE) signalling a condition variable the host sleeps on
 *   poll100   clGetEventInfo status every 100 us, sleeping in between (hetflow's completion poller)
 * Variants alternate in rounds, so noise hits all. Prints, per variant and kernel length, the
 * median µs per round trip and the CPU time the process used per wall second (1.0 = one core busy).
 *   cc -O2 notice_probe.c -lOpenCL -lpthread -o notice_probe && ./notice_probe [N=200] [ROUNDS=3]
 * Picks the first GPU, else the first device (HETFLOW-free: plain OpenCL). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "probe_device.h"

static double cpu_us(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int fired = 0;
static void CL_CALLBACK on_complete(cl_event e, cl_int status, void* data) {
  (void)e, (void)status, (void)data;
  pthread_mutex_lock(&m);
  fired = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&m);
}

static cl_int status_of(cl_event e) {
  cl_int s;
  check(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL), "clGetEventInfo");
  return s;
}

enum { SPIN, WAIT, CALLBACK, POLL100, VARIANTS };
static const char* names[] = {"spin", "wait", "callback", "poll100"};

/* n round trips; returns µs per round trip, *cpu = process CPU µs per wall µs. */
static double trips(cl_command_queue q, cl_kernel k, int n, int variant, double* cpu) {
  const size_t global = 1;
  const double t0 = now_us(), c0 = cpu_us();
  for (int i = 0; i < n; ++i) {
    cl_event e;
    check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, &e), "clEnqueueNDRangeKernel");
    if (variant == CALLBACK) {
      fired = 0;
      check(clSetEventCallback(e, CL_COMPLETE, on_complete, NULL), "clSetEventCallback");
    }
    check(clFlush(q), "clFlush");
    switch (variant) {
      case SPIN:
        while (status_of(e) > CL_COMPLETE) {
        }
        break;
      case WAIT:
        check(clWaitForEvents(1, &e), "clWaitForEvents");
        break;
      case CALLBACK:
        pthread_mutex_lock(&m);
        while (!fired) pthread_cond_wait(&cv, &m);
        pthread_mutex_unlock(&m);
        break;
      case POLL100:
        while (status_of(e) > CL_COMPLETE) usleep(100);
        break;
    }
    clReleaseEvent(e);
  }
  const double wall = now_us() - t0;
  *cpu = (cpu_us() - c0) / wall;
  return wall / n;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 200, rounds = argc > 2 ? atoi(argv[2]) : 3;
  cl_device_id dev = probe_device(-1);
  char name[256];
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  check(err, "clCreateContext");
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  check(err, "clCreateCommandQueue");
  const char* src =
      "__kernel void busy(__global float* x, int work) { float a = x[0];"
      " for (int i = 0; i < work; ++i) a = a * 0.999f + 1.0f; x[0] = a; }";
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  check(err, "clCreateProgramWithSource");
  check(clBuildProgram(prog, 1, &dev, "", NULL, NULL), "clBuildProgram");
  cl_kernel k = clCreateKernel(prog, "busy", &err);
  check(err, "clCreateKernel");
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, NULL, &err);
  check(err, "clCreateBuffer");
  check(clSetKernelArg(k, 0, sizeof buf, &buf), "clSetKernelArg");
  printf("notice_probe on %s: %d round trips per run, median of %d rounds\n", name, n, rounds);
  printf("%-10s %10s %14s %10s\n", "variant", "work", "us per trip", "cpu/wall");
  const int works[] = {0, 100000, 1000000};
  for (int w = 0; w < 3; ++w) {
    int work = works[w];
    check(clSetKernelArg(k, 1, sizeof work, &work), "clSetKernelArg");
    double t[VARIANTS][16], c[VARIANTS][16];
    const int runs = rounds < 16 ? rounds : 16;
    for (int r = -1; r < runs; ++r)
      for (int v = 0; v < VARIANTS; ++v) {
        double cpu;
        const double us = trips(q, k, work >= 1000000 ? n / 10 : n, v, &cpu);
        if (r >= 0) t[v][r] = us, c[v][r] = cpu;
      }
    for (int v = 0; v < VARIANTS; ++v) {
      qsort(t[v], runs, sizeof(double), cmp);
      qsort(c[v], runs, sizeof(double), cmp);
      printf("%-10s %10d %14.1f %10.2f\n", names[v], work, t[v][runs / 2], c[v][runs / 2]);
    }
  }
  return 0;
}
