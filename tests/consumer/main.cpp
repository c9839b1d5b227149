// Uses the installed hetflow: its headers, its library and its installed kernels_cl/.
#include <hetflow/hetflow.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  hetflow::Controller c;
  if (argc > 1) {  // consumer MISSING.cl: what the installed library says when a kernel file is missing
    try {
      c.kernel(argv[1], "k");
    } catch (const hetflow::FileNotFoundError& e) {
      std::printf("%s\n", e.what());
    }
    return 0;
  }
  auto k = c.kernel("hetflow_test.cl", "scale_in_place");
  auto x = c.tile<float>(256, "x");
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  c.move_to(x);
  c.launch(k, hetflow::Range(256), hetflow::io(x), 256, 2.0f);
  c.move_from(x);
  c.wait(x);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] != float(i) * 2.0f + 1.0f) return 1;
  std::printf("consumer ok on %s\n", c.device().name.c_str());
  return 0;
}
