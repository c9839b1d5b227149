// banded_heat [controllers] [runs per controller]: the banded heat program on the default device
// (HETFLOW_* variables apply), each run checked against the host reference. Exit 0: all correct.
// tests/test_concurrent_launches.cpp runs it in many fresh processes; perf/run-gpu.sh on the GPU
// host's PoCL.
#include <cstdio>
#include <cstdlib>

#include "workloads/banded_heat.hpp"

int main(int argc, char** argv) {
  const int controllers = argc > 1 ? std::atoi(argv[1]) : 1;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 1;
  const hetflow::workloads::HeatShape shape;
  const std::vector<float> expected = hetflow::workloads::heat_reference(shape);
  int wrong = 0;
  for (int n = 0; n < controllers; ++n) {
    hetflow::Controller c;
    for (int r = 0; r < runs; ++r) wrong += hetflow::workloads::banded_heat(c, shape) != expected;
  }
  std::printf("banded_heat: %d of %d runs wrong\n", wrong, controllers * runs);
  return wrong == 0 ? 0 : 1;
}
