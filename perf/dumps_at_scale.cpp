// A program that records N requests of four kinds on two tiles (default 50,000), for what
// HETFLOW_DUMP / HETFLOW_TRACE and `hetflow report` / `hetflow dump` cost at that size
// (perf/ab-dumps.sh, perf/RESULTS.md 2026-11-28 "dumps at scale").
#include <hetflow/controller.hpp>

#include <cstdio>
#include <cstdlib>

using namespace hetflow;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 50000;
  Controller c;
  auto a = c.tile<float>(16, "a"), b = c.tile<float>(16, "b");
  for (int i = 0; i < 16; ++i) a[i] = 1;
  for (int i = 0; i < n; ++i) {
    if (i % 4 == 0)
      c.move_to(a);
    else if (i % 4 == 1)
      c.move_from(a);
    else if (i % 4 == 2)
      c.host_task(
          "copy",
          [a, b]() mutable {
            for (int k = 0; k < 16; ++k) b[k] = a[k];
          },
          in(a), out(b));
    else
      c.host_task(
          "touch", [b]() mutable { b[0] += 1; }, io(b));
    if (i % 5000 == 4999) c.wait_all();
  }
  c.wait_all();
  std::printf("done %f\n", double(b[0]));
}
