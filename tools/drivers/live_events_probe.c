/* Does a driver's enqueue get slower while more of the program's events are alive (not released)?
 * A chain of empty kernels on one in-order queue, each waiting on the previous one's event, as
 * perf/bench_overhead's native row; event i is released after command i+K is enqueued. Also: a
 * status query on an older event after each enqueue (what the engine's settling does).
 * Variants alternate in rounds, so noise hits all; prints µs per enqueue, median of the rounds.
 *   cc -O2 live_events_probe.c -lOpenCL -o probe && ./probe [N=20000] [ROUNDS=5]
 * Picks the first GPU, else the first device. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "probe_device.h"

/* keep: events alive behind the newest (release event i once i+keep is enqueued); query 1: ask the
 * status of the event `keep` back after each enqueue; query 2: after every 16th enqueue, ask the
 * status of the 16 events from `keep` back (as many as are alive: the same number of queries, in
 * batches). */
static double chain(cl_command_queue q, cl_kernel k, int n, int keep, int query, cl_event* ring) {
  const size_t global = 1;
  const double t0 = now_us();
  for (int i = 0; i < n; ++i) {
    cl_event prev = i ? ring[(i - 1) % (keep + 1)] : NULL;
    cl_event* slot = &ring[i % (keep + 1)];
    if (i > keep) check(clReleaseEvent(*slot), "clReleaseEvent");
    check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, prev ? 1 : 0, prev ? &prev : NULL, slot),
          "clEnqueueNDRangeKernel");
    for (int j = 0; j < (query == 1 ? 1 : query == 2 && i % 16 == 15 ? 16 : 0); ++j) {
      if (i - keep - j < 0 || j >= keep) break; /* only events still alive */
      cl_int status;
      check(clGetEventInfo(ring[(i - keep - j) % (keep + 1)], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                           NULL),
            "clGetEventInfo");
    }
  }
  check(clFinish(q), "clFinish");
  const double t = (now_us() - t0) / n;
  for (int i = n - keep - 1 < 0 ? 0 : n - keep - 1; i < n; ++i) clReleaseEvent(ring[i % (keep + 1)]);
  return t;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 5;
  const struct empty_kernel_setup s = probe_empty_kernel();
  static const int keeps[] = {1, 16, 256, 4096};
  enum { nk = sizeof keeps / sizeof keeps[0], variants = 3 * nk };
  cl_event* ring = malloc(sizeof(cl_event) * (size_t)(n + 1));
  double* t = malloc(sizeof(double) * (size_t)(variants * rounds));
  chain(s.q, s.k, n / 10 + 1, 1, 0, ring); /* warm-up */
  for (int r = 0; r < rounds; ++r)
    for (int v = 0; v < variants; ++v) t[v * rounds + r] = chain(s.q, s.k, n, keeps[v % nk], v / nk, ring);
  printf("%s: %d chained empty kernels per run, median of %d rounds, us per enqueue\n", s.name, n, rounds);
  printf("%-16s %12s %14s %18s\n", "events alive", "no query", "query per enq.", "16 per 16th enq.");
  for (int v = 0; v < variants; ++v) qsort(t + v * rounds, (size_t)rounds, sizeof(double), cmp);
  for (int v = 0; v < nk; ++v)
    printf("%-16d %12.2f %14.2f %18.2f\n", keeps[v] + 1, t[v * rounds + rounds / 2], t[(v + nk) * rounds + rounds / 2],
           t[(v + 2 * nk) * rounds + rounds / 2]);
  return 0;
}
