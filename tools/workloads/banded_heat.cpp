#include "banded_heat.hpp"

#include <hetflow/hetflow.hpp>

#include <algorithm>

namespace hetflow::workloads {
namespace {
std::vector<float> initial_grid(const HeatShape& s) {
  std::vector<float> g(std::size_t(s.width) * s.height);
  for (int y = 0; y < s.height; ++y)
    for (int x = 0; x < s.width; ++x) g[std::size_t(y) * s.width + x] = float((x * 7 + y * 13) % 101);
  return g;
}
}  // namespace

std::vector<float> heat_reference(const HeatShape& s) {
  std::vector<float> src = initial_grid(s), dst(src.size());
  const int w = s.width, h = s.height;
  for (int step = 0; step < s.steps; ++step) {
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const std::size_t i = std::size_t(y) * w + x;
        dst[i] = (x == 0 || y == 0 || x == w - 1 || y == h - 1)
                     ? src[i]
                     : (src[i - 1] + src[i + 1] + src[i - w] + src[i + w]) * 0.25f;  // kernels_cl/heat.cl
      }
    std::swap(src, dst);
  }
  return src;
}

std::vector<float> banded_heat(Controller& c, const HeatShape& s) {
  const Kernel k = c.kernel("heat.cl", "heat_step");
  const Extent e{std::size_t(s.width), std::size_t(s.height)};
  Tile<float> grids[2] = {c.tile<float>(e, "heat0"), c.tile<float>(e, "heat1")};
  const std::vector<float> init = initial_grid(s);
  std::copy(init.begin(), init.end(), grids[0].data());
  c.move_to(grids[0]);
  const int band = s.height / s.bands;
  for (int step = 0; step < s.steps; ++step) {
    const Tile<float>& src = grids[step % 2];
    const Tile<float>& dst = grids[(step + 1) % 2];
    for (int b = 0; b < s.bands; ++b) {
      const int first = b * band, rows = b == s.bands - 1 ? s.height - first : band;
      const int halo_first = std::max(0, first - 1), halo_end = std::min(s.height, first + rows + 1);
      c.launch(k, Range(std::size_t(s.width), std::size_t(rows)).offset(0, std::size_t(first)),
               in(src.rows(std::size_t(halo_first), std::size_t(halo_end - halo_first))),
               out(dst.rows(std::size_t(first), std::size_t(rows))), s.width, s.height);
    }
  }
  const Tile<float>& last = grids[s.steps % 2];
  c.move_from(last);
  c.wait(last);
  return {last.data(), last.data() + last.size()};
}

}  // namespace hetflow::workloads
