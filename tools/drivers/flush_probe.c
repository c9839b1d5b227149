/* Does a command enqueued without clFlush reach the device on its own? OpenCL promises it only
 * after a flush (or a blocking call), which is why hetflow flushes a queue whenever its streaming
 * node runs dry — a clFlush costs 1.3-3 us on NVIDIA, most of what a pipelined request adds over
 * hand-written code (issue 10). Each case enqueues, never flushes, sleeps, then asks the status of
 * its last command once (one query: a query that itself submitted the command would still find it
 * queued or submitted, not complete):
 *   kernel     one empty kernel
 *   burst      100 empty kernels, the last one's status
 *   write      one 4-byte non-blocking clEnqueueWriteBuffer
 * for sleeps of 1, 10 and 100 ms, ROUNDS times each (a fresh in-order queue each time). Prints how
 * many rounds found the command complete. Then the same with a clFlush after the enqueue (the
 * control: should be all). Plain OpenCL; picks platform P's first device (default: the first GPU).
 *   cc -O2 flush_probe.c -lOpenCL -o flush_probe && ./flush_probe [ROUNDS=5] [PLATFORM] */
#include <time.h>

#include "probe_device.h"
static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 5;
  cl_device_id dev = probe_device(argc > 2 ? atoi(argv[2]) : -1);
  char name[256];
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  check(err, "clCreateContext");
  const char* src = "__kernel void empty(__global int* x) { (void)x; }";
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  check(err, "clCreateProgramWithSource");
  check(clBuildProgram(prog, 1, &dev, "", NULL, NULL), "clBuildProgram");
  cl_kernel k = clCreateKernel(prog, "empty", &err);
  check(err, "clCreateKernel");
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, NULL, &err);
  check(err, "clCreateBuffer");
  check(clSetKernelArg(k, 0, sizeof buf, &buf), "clSetKernelArg");
  static int host = 7;
  printf("flush_probe on %s, %d rounds; rounds that found the last command complete after the sleep\n", name, rounds);
  printf("%-8s %-8s %8s %8s %8s\n", "case", "flush", "1 ms", "10 ms", "100 ms");
  const char* cases[] = {"kernel", "burst", "write"};
  const int sleeps[] = {1, 10, 100};
  for (int flush = 0; flush < 2; ++flush)
    for (int c = 0; c < 3; ++c) {
      int complete[3] = {0, 0, 0};
      for (int s = 0; s < 3; ++s)
        for (int r = 0; r < rounds; ++r) {
          cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
          check(err, "clCreateCommandQueue");
          cl_event last = NULL;
          const size_t global = 1;
          const int count = c == 1 ? 100 : 1;
          for (int i = 0; i < count; ++i) {
            if (last) clReleaseEvent(last);
            if (c == 2)
              check(clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, 4, &host, 0, NULL, &last), "clEnqueueWriteBuffer");
            else
              check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, &last), "clEnqueueNDRangeKernel");
          }
          if (flush) clFlush(q);
          sleep_ms(sleeps[s]);
          cl_int status = -1;
          check(clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL),
                "clGetEventInfo");
          complete[s] += status == CL_COMPLETE;
          clFinish(q);
          clReleaseEvent(last);
          clReleaseCommandQueue(q);
        }
      printf("%-8s %-8s %5d/%-2d %5d/%-2d %5d/%-2d\n", cases[c], flush ? "yes" : "no", complete[0], rounds, complete[1],
             rounds, complete[2], rounds);
    }
  return 0;
}
