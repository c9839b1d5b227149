// device_memory [GiB per tile = 4] [most tiles = 256]: device-only tiles made until the device says
// no, then the controller keeps working for the tiles it has (docs/drivers.md, "Device faults").
// Exit 0 when the refusal is an OpenCLError naming the tile and the bytes asked, and a pipeline
// on a tile made before it (and on a fresh small tile) still runs correctly.
#include <hetflow/hetflow.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace hetflow;

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 4.0;
  const int most = argc > 2 ? std::atoi(argv[2]) : 256;
  Controller c;
  const std::size_t elems = std::size_t(gib * double(1u << 30)) / sizeof(int);
  std::printf("device: %s, %zu bytes of global memory; tiles of %zu bytes\n", c.device().name.c_str(),
              std::size_t(c.device().global_mem_bytes), elems * sizeof(int));
  std::vector<Tile<int>> big;
  std::string refusal;
  for (int i = 0; i < most && refusal.empty(); ++i) {
    const std::string name = "big" + std::to_string(i);
    try {
      big.push_back(c.device_tile<int>(elems, name));
    } catch (const OpenCLError& e) {
      refusal = e.what();
      std::printf("refused after %zu tiles: %s\n", big.size(), e.what());
      const bool names_tile = refusal.find("'" + name + "'") != std::string::npos;
      const bool names_bytes = refusal.find(std::to_string(elems * sizeof(int))) != std::string::npos;
      std::printf("%s: the error names the tile and the bytes asked\n", names_tile && names_bytes ? "ok" : "WRONG");
      if (!names_tile || !names_bytes) return 1;
    }
  }
  if (refusal.empty()) {
    std::printf("the device took %d tiles without refusing: nothing to check\n", most);
    return 2;
  }
  auto k = c.kernel_from_source("kernel void fill(global int* x, int v) { x[get_global_id(0)] = v; }", "fill");
  auto small = c.tile<int>(1000, "small");
  c.launch(k, Range(1 << 20), out(big.front()), 5);  // a tile made before the refusal
  c.launch(k, Range(1000), out(small), 9);
  c.move_from(small);
  c.wait_all();
  bool right = true;
  for (int i = 0; i < 1000; ++i) right &= small[i] == 9;
  std::printf("%s: the controller keeps working after the refusal\n", right ? "ok" : "WRONG");
  return right ? 0 : 1;
}
