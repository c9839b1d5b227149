// One kind of request, pipelined, for a profiler to look at (perf/RESULTS.md, 2026-11-26 10:54Z):
// bench_overhead interleaves many rows and raw OpenCL in one process, which a sampling profile
// cannot tell apart. Async, one kernel queue, the default device (HETFLOW_DEVICE picks another).
//   bench_request_stream kernel|transfer [requests=200000]
//   perf record -- bench_request_stream transfer     then: perf report --sort dso,sym
// "kernel": empty launches, each io on one 4-byte tile (so each waits on the one before);
// "transfer": move_to and move_from of that tile in turn, alternating between the copy queues.
// A wait_all every 20,000 requests, as bench_overhead's runs end with one. Prints µs per request.
#include <hetflow/hetflow.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace hetflow;

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  const long n = argc > 2 ? std::atol(argv[2]) : 200'000;
  if ((kind != "kernel" && kind != "transfer") || n < 1) {
    std::fprintf(stderr, "usage: bench_request_stream kernel|transfer [requests >= 1]\n");
    return 2;
  }
  try {
    ControllerOptions o;
    o.policy = Policy::async;
    o.kernel_queues = 1;
    Controller c(o);
    Kernel k = c.kernel("hetflow_test.cl", "empty_kernel");
    Tile<float> x = c.tile<float>(1, "x");
    x[0] = 1.0f;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      if (kind == "kernel")
        c.launch(k, Range(1), io(x));
      else if (i % 2 == 0)
        c.move_to(x);
      else
        c.move_from(x);
      if (i % 20'000 == 19'999) c.wait_all();
    }
    c.wait_all();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s on %s: %ld requests, %.3f us per request\n", kind.c_str(), c.device().name.c_str(), n,
                s / double(n) * 1e6);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_request_stream: %s\n", e.what());
    return 1;
  }
  return 0;
}
