// Heat diffusion on a grid, each step as one launch of one kernel per row band (global offset on
// the band): the bands of a step are independent, and a band of the next step waits only for its
// neighbours. The pattern the region API invites, and the one that aborted PoCL < 7.0 inside its
// kernel cache (docs/drivers.md).
#pragma once
#include <hetflow/controller.hpp>

#include <vector>

namespace hetflow::workloads {

struct HeatShape {
  int width = 512, height = 512, bands = 4, steps = 40;
};

// The final grid computed on the host, bit-identical to the kernel's (kernels_cl/heat.cl).
std::vector<float> heat_reference(const HeatShape& s);
// Runs the banded program on `c` and returns the final grid (its host image, after a wait).
std::vector<float> banded_heat(Controller& c, const HeatShape& s);

}  // namespace hetflow::workloads
