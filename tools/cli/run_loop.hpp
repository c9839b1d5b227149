// `hetflow run mandelbrot|nbody|spmv|barneshut`: a loop balanced between the CPU and the device (or
// several: --devices) by a scheduler (hetflow::parallel_for), called `calls` times as time steps are.
#pragma once
#include <hetflow/controller.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace hetflow::cli {

struct LoopRunOptions {
  std::string workload, device, scheduler = "logfit";
  // Several devices, one controller each, the first the home one; empty: `device` alone.
  std::vector<std::string> devices;
  std::size_t size = 0;  // 0: the workload's default
  int calls = 5;
  unsigned cpu_workers = 0;
  unsigned device_slots = 0;     // 0: LoopOptions' default
  std::optional<Policy> policy;  // none: the controllers' default
  unsigned kernel_queues = 0;    // 0: the controllers' default
  bool fast_math = false, verify = false;
  std::string dump, trace;
};

void run_loop(const LoopRunOptions& o);

}  // namespace hetflow::cli
