// The Sobel workload of pipelines.hpp written as a tbb::flow::graph of hetflow's nodes
// (include/hetflow/flow.hpp): the same kernels, inputs, geometry and host work, so its results are
// bit-identical to the imperative version's; only who orders the requests differs.
#pragma once
#include <hetflow/controller.hpp>

#include "workloads/pipelines.hpp"

namespace hetflow::workloads {

// `slots` input images, sets of device images and output images, each recycled through a
// buffer_node pool as soon as the frame is done with it, as the imperative version's slots.
RunResult sobel_flow_graph(Controller& c, const SobelRun& run, int slots = 4);

}  // namespace hetflow::workloads
