// How the Sobel workload's host side is sized: frame slots and the threads its host work may use.
// The hetflow version (pipelines.cpp) and the hand-written one (perf/native/) take both from here,
// so the two always run the same workload.
#pragma once
#include <hetflow/opencl.hpp>

#include <memory>

#include <tbb/task_arena.h>

namespace hetflow::workloads {

// Frame slots (host and device images of an input and an output frame each) under async. An
// input slot is held from its frame's generation until its H2D has read it, an output slot from
// its D2H until the host has consumed it, so for the copies never to wait for host work a slot
// must cover one copy plus the host work of a frame: 2 + ceil(host work / copy) per frame. On the
// H200 host (perf/RESULTS.md) the host work of a 16K frame took ~19 ms and each copy ~10.5 ms:
// 2 + 2 = 4. Under sync one slot would do; the same count is used so both policies touch the
// same memory.
inline constexpr int kDefaultSobelSlots = 4;

// The threads the workload's host work (frame generation, result sums) may use: every core the
// device leaves free. A GPU leaves them all; a CPU device runs its kernels and copies on
// `compute_units` of the host's cores, and host work beside them would only take cores from it,
// so it gets the rest, and at least one.
int default_host_threads(cl_device_type type, unsigned compute_units);
int default_host_threads(const cl::Device& device);

// The arena the host work runs in: `threads` concurrency (0: default_host_threads(device)).
// Throws hetflow::UsageError naming the value when it is negative.
std::shared_ptr<tbb::task_arena> host_arena(const cl::Device& device, int threads);

}  // namespace hetflow::workloads
