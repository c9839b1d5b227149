// The four heterogeneous loop workloads of issue 15, each a CPU body, a kernel and a sequential
// reference over the same tiles: Barnes-Hut (irregular, the seeds'), N-body all pairs (regular),
// Mandelbrot by rows (irregular, no input), CSR SpMV on an R-MAT matrix (irregular, memory-bound).
#pragma once
#include "workloads/barnes_hut_loop.hpp"
#include "workloads/mandelbrot_loop.hpp"
#include "workloads/nbody_loop.hpp"
#include "workloads/spmv_loop.hpp"
