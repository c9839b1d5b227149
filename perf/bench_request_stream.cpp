// One kind of request, pipelined, for a profiler to look at (perf/RESULTS.md, 2026-11-26 10:54Z):
// bench_overhead interleaves many rows and raw OpenCL in one process, which a sampling profile
// cannot tell apart. Async, one kernel queue, the default device (HETFLOW_DEVICE picks another).
//   bench_request_stream kernel|transfer|raw-kernel|raw-transfer [requests=200000]
//   perf record -- bench_request_stream transfer     then: perf report --sort dso,sym
// raw-kernel and raw-transfer: the same streams enqueued by hand (perf/native/raw_requests.hpp, no
// profiling), so that a profile of each tells what the engine adds to the driver's own calls.
// "kernel": empty launches, each io on one 4-byte tile (so each waits on the one before);
// "transfer": move_to and move_from of that tile in turn, alternating between the copy queues.
// A wait_all every 20,000 requests, as bench_overhead's runs end with one. Prints µs per request.
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "native/raw_requests.hpp"

using namespace hetflow;

namespace {

constexpr long kBatch = 20'000;  // the stream ends with a wait_all every kBatch requests

// Runs `stream` and prints its time per request.
template <class Stream>
void timed(const std::string& kind, const std::string& device, long n, Stream&& stream) {
  const auto t0 = std::chrono::steady_clock::now();
  stream();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s on %s: %ld requests, %.3f us per request\n", kind.c_str(), device.c_str(), n, s / double(n) * 1e6);
}

void raw_stream(const std::string& kind, long n) {
  const DeviceInfo d = select_device().device;
  native::RawRequests requests(d, false);
  timed(kind, d.name, n, [&] {
    for (long done = 0; done < n; done += kBatch) {
      const int batch = int(std::min(kBatch, n - done));
      if (kind == "raw-kernel")
        requests.kernels(batch);
      else
        requests.transfers(batch);
    }
  });
}

void hetflow_stream(const std::string& kind, long n) {
  ControllerOptions o;
  o.policy = Policy::async;
  o.kernel_queues = 1;
  Controller c(o);
  Kernel k = c.kernel("hetflow_test.cl", "empty_kernel");
  Tile<float> x = c.tile<float>(1, "x");
  x[0] = 1.0f;
  timed(kind, c.device().name, n, [&] {
    for (long i = 0; i < n; ++i) {
      if (kind == "kernel")
        c.launch(k, Range(1), io(x));
      else if (i % 2 == 0)
        c.move_to(x);
      else
        c.move_from(x);
      if (i % kBatch == kBatch - 1) c.wait_all();
    }
    c.wait_all();
  });
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  const long n = argc > 2 ? std::atol(argv[2]) : 200'000;
  const bool raw = kind == "raw-kernel" || kind == "raw-transfer";
  if ((kind != "kernel" && kind != "transfer" && !raw) || n < 1) {
    std::fprintf(stderr, "usage: bench_request_stream kernel|transfer|raw-kernel|raw-transfer [requests >= 1]\n");
    return 2;
  }
  try {
    if (raw)
      raw_stream(kind, n);
    else
      hetflow_stream(kind, n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_request_stream: %s\n", e.what());
    return 1;
  }
  return 0;
}
