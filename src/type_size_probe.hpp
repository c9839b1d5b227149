#pragma once
// The size of a type a kernel argument names that is no OpenCL C built-in (a typedef, a struct, or
// size_t, whose size is the device's): what a launch checks a tile's elements or a scalar against
// there. Only the device's compiler knows it — the typedef may sit in an included header, under an
// #ifdef, or be a struct with the device's padding — so it is asked once per kernel argument: the
// kernel's own source, built with its options and one more kernel that writes sizeof(type), run
// once. A "typedef double real" kernel given a float tile wrote twice the tile's bytes (a user's
// trial, 2026-11-29); a C++ struct whose layout differs from the kernel's is caught the same way.
#include <hetflow/program.hpp>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace hetflow::detail {

class TypeSizeProbe {
 public:
  // sizeof(type) on `device` as argument `arg` of `kernel` sees it; 0 where the probe could not
  // tell (it is logged once): that argument is then left unchecked, as before.
  std::size_t size_of(const Kernel& kernel, std::size_t arg, const std::string& type, ProgramCache& programs,
                      const cl::Context& context, const cl::Device& device);

 private:
  std::mutex m_;  // held through a probe: one build per argument, whichever thread launches first
  // By kernel handle: the program cache keeps its kernels, so a handle is not reused in its life.
  std::map<std::pair<cl_kernel, std::size_t>, std::size_t> sizes_;
};

}  // namespace hetflow::detail
