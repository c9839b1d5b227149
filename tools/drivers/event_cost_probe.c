/* What an event costs a driver's enqueue: streams of empty kernels and of 4-byte writes on one
 * in-order queue without profiling, (a) each command chained to the previous one by its event, as
 * perf/bench_overhead's native rows (and hetflow) enqueue, (b) each returning an event released at
 * once, without a wait list (the queue's order suffices), (c) without events, (d) without events but
 * a marker with an event after every 16th command. If (c) is far below (a), a runtime that asks for
 * events only where something waits on them beats "raw OpenCL with events".
 * Variants alternate in rounds, so noise hits all; prints µs per command, median of the rounds.
 *   cc -O2 event_cost_probe.c -lOpenCL -o probe && ./probe [N=20000] [ROUNDS=5] */
#include "probe_device.h"

enum { chained, released, none, marker16, variants };
static const char* names[variants] = {"event each, chained", "event each, released", "no events",
                                      "no events, marker/16"};

static double stream(cl_command_queue q, cl_kernel k, cl_mem b, float* host, int transfer, int n, int v) {
  const size_t global = 1;
  cl_event prev = NULL;
  const double t0 = now_us();
  for (int i = 0; i < n; ++i) {
    cl_event ev = NULL;
    cl_event* want = v == chained || v == released ? &ev : NULL;
    const cl_uint nw = v == chained && prev ? 1 : 0;
    const cl_event* wl = nw ? &prev : NULL;
    if (transfer)
      check(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, 4, host, nw, wl, want), "clEnqueueWriteBuffer");
    else
      check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, nw, wl, want), "clEnqueueNDRangeKernel");
    if (prev) check(clReleaseEvent(prev), "clReleaseEvent");
    prev = NULL;
    if (v == chained) prev = ev;
    if (v == released) check(clReleaseEvent(ev), "clReleaseEvent");
    if (v == marker16 && i % 16 == 15) {
      cl_event m;
      check(clEnqueueMarkerWithWaitList(q, 0, NULL, &m), "clEnqueueMarkerWithWaitList");
      check(clReleaseEvent(m), "clReleaseEvent");
    }
  }
  check(clFlush(q), "clFlush");
  check(clFinish(q), "clFinish");
  const double t = (now_us() - t0) / n;
  if (prev) clReleaseEvent(prev);
  return t;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 5;
  const struct empty_kernel_setup s = probe_empty_kernel();
  float host[1] = {1.0f};
  double* t = malloc(sizeof(double) * (size_t)(2 * variants * rounds));
  for (int tr = 0; tr < 2; ++tr) stream(s.q, s.k, s.buf, host, tr, n / 10 + 1, chained); /* warm-up */
  for (int r = 0; r < rounds; ++r)
    for (int tr = 0; tr < 2; ++tr)
      for (int v = 0; v < variants; ++v) t[(tr * variants + v) * rounds + r] = stream(s.q, s.k, s.buf, host, tr, n, v);
  printf("%s: %d commands per run, median of %d rounds, us per command\n", s.name, n, rounds);
  printf("%-24s %14s %16s\n", "variant", "empty kernel", "4-byte write");
  for (int v = 0; v < variants; ++v)
    printf("%-24s %14.2f %16.2f\n", names[v], median(t + v * rounds, rounds),
           median(t + (variants + v) * rounds, rounds));
  return 0;
}
