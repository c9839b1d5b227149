// out_of_bounds: one kernel that writes past the end of its tile — on PoCL's CPU device that may
// kill the process; under HETFLOW_DEVICE=oclgrind, Oclgrind reports each invalid write with the
// kernel's name (tests/test_oclgrind.cpp).
#include <hetflow/hetflow.hpp>

#include <cstdio>

int main() {
  hetflow::Controller c;
  std::printf("device: %s\n", c.device().name.c_str());
  auto k = c.kernel_from_source(
      "kernel void writes_past_the_end(global float* x) { x[get_global_id(0) + 1000] = 1.0f; }", "writes_past_the_end");
  auto x = c.tile<float>(10, "x");
  c.launch(k, hetflow::Range(10), hetflow::out(x));
  c.move_from(x);
  c.wait_all();
  std::printf("finished\n");
  return 0;
}
