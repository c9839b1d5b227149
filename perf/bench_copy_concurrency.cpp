// Whether the device runs a kernel, a host-to-device and a device-to-host copy at one instant when
// each is on its own in-order queue with no dependencies (the validation case T-06, docs/architecture.md), written
// as hand-written OpenCL would (perf/copy_probe.hpp: pinned host memory, one flush per command).
// Prints each command's profiled interval relative to the first start, and which overlap.
// The "fresh" case copies into a device buffer never used before: a runtime that allocates device
// memory at first use may hold the other commands back then; "fresh, touched" first writes one
// byte of it on another queue and waits, as hetflow does when it creates a tile.
//   bench_copy_concurrency [MiB=256] [kernel-repeat=64]
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "copy_probe.hpp"

using namespace hetflow;

namespace {

bool overlap(const bench::ProbeInterval& a, const bench::ProbeInterval& b) {
  return a.start < b.end && b.start < a.end;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t bytes = std::size_t(argc > 1 ? std::atoi(argv[1]) : 256) << 20;
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 64;
  const auto d = select_device();
  std::printf("copy/kernel concurrency on %s (%s), %zu MiB per copy\n", d.device.name.c_str(),
              d.device.platform_name.c_str(), bytes >> 20);
  bench::CopyProbe probe(d.device.device, bytes, repeat);
  const bench::ProbeCase cases[] = {{"H2D alone", false, true, false},
                                    {"D2H alone", false, false, true},
                                    {"H2D + D2H", false, true, true},
                                    {"K + H2D", true, true, false},
                                    {"K + D2H", true, false, true},
                                    {"K + D2H + H2D", true, true, true},
                                    {"same, H2D fresh", true, true, true, true},
                                    {"fresh, touched", true, true, true, true, true}};
  for (int rep = 0; rep < 2; ++rep) {  // the first round warms up
    if (rep) std::printf("\n%-16s %-42s %s\n", "case", "intervals (us from first start)", "overlapping");
    for (const auto& c : cases) {
      const auto iv = probe.run(c);
      if (!rep) continue;
      cl_ulong t0 = iv[0].start;
      for (const auto& i : iv) t0 = std::min(t0, i.start);
      std::string text, pairs;
      for (const auto& i : iv) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s[%.0f,%.0f) ", i.name.c_str(), double(i.start - t0) / 1e3,
                      double(i.end - t0) / 1e3);
        text += buf;
      }
      for (std::size_t a = 0; a < iv.size(); ++a)
        for (std::size_t b = a + 1; b < iv.size(); ++b)
          if (overlap(iv[a], iv[b])) pairs += iv[a].name + "||" + iv[b].name + " ";
      std::printf("%-16s %-42s %s\n", c.name, text.c_str(), pairs.empty() ? "none" : pairs.c_str());
    }
  }
}
