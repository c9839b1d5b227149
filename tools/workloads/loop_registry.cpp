#include "workloads/loop_registry.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "workloads/loop_workloads.hpp"

namespace hetflow::workloads {
namespace {

template <class W>
class Adapter : public LoopWorkload {
 public:
  Adapter(Controller& c, const typename W::Params& p, std::string what) : w_(c, p), what_(std::move(what)) {}
  std::string describe() const override { return what_; }
  std::size_t size() const override { return w_.size(); }
  LoopBody body() override {
    LoopBody b;
    b.cpu = [this](Chunk ch) { w_.cpu(ch.begin, ch.end); };
    b.device = [this](Controller& c, Chunk ch) { w_.device(c, ch.begin, ch.end); };
    b.reads = w_.reads();
    if constexpr (requires { w_.constants(); }) b.constants = w_.constants();
    b.writes = [this](Chunk ch) { return w_.writes(ch.begin, ch.end); };
    return b;
  }
  void before_call() override {
    if (!called_) w_.before_step(), reference_.reset();  // the tree of the first step; the bench repeats that step
    called_ = true;
  }
  void clear_output() override { w_.clear_output(); }
  // The sequential reference once per input: it runs on one core (Mandelbrot 4096² ~40 s on the
  // GPU host), and bench_loops checks every variant, which made a two-GPU table outlast its 200 s.
  LoopCheck check() const override {
    if (!reference_) reference_ = w_.reference();
    return w_.check(*reference_);
  }

 private:
  W w_;
  std::string what_;
  bool called_ = false;
  mutable std::optional<decltype(std::declval<const W&>().reference())> reference_;
};

}  // namespace

const std::vector<std::string>& loop_workload_names() {
  static const std::vector<std::string> names = {"mandelbrot", "nbody", "spmv", "barneshut"};
  return names;
}

LoopSizeRange loop_size_range(const std::string& name) {
  constexpr std::size_t int32_max = std::size_t(std::numeric_limits<std::int32_t>::max());
  if (name == "mandelbrot") return {1, 46340, "an image side (side * side < 2^31)"};
  if (name == "nbody") return {1, int32_max, "a number of bodies"};
  if (name == "spmv") {
    // 2^scale rows of edge_factor entries each, indexed by int32.
    const std::size_t edge_factor = RmatParams{}.edge_factor;
    std::size_t scale = 1;
    while ((std::size_t(1) << (scale + 1)) * edge_factor <= int32_max) ++scale;
    return {1, scale, "an R-MAT scale (2^scale rows)"};
  }
  if (name == "barneshut") return {1, (std::size_t(1) << 31) - 3, "a number of bodies"};
  throw UsageError("no loop workload '" + name + "': mandelbrot, nbody, spmv or barneshut");
}

std::unique_ptr<LoopWorkload> make_loop_workload(Controller& c, const std::string& name, std::size_t size,
                                                 bool fast_math) {
  const std::string n = std::to_string(size);
  if (name == "mandelbrot") {
    MandelbrotLoop::Params p;
    p.width = p.height = size ? size : 1024;
    return std::make_unique<Adapter<MandelbrotLoop>>(
        c, p, "mandelbrot, " + std::to_string(p.width) + "x" + std::to_string(p.height) + " (rows)");
  }
  if (name == "nbody") {
    NBodyLoop::Params p;
    p.n = size ? size : 16384;
    p.fast_math = fast_math;
    return std::make_unique<Adapter<NBodyLoop>>(c, p, "nbody, " + std::to_string(p.n) + " bodies");
  }
  if (name == "spmv") {
    SpmvLoop::Params p;
    p.scale = unsigned(size ? size : 16);
    return std::make_unique<Adapter<SpmvLoop>>(c, p, "spmv, R-MAT 2^" + std::to_string(p.scale) + " rows");
  }
  if (name == "barneshut") {
    BarnesHutLoop::Params p;
    p.n = size ? size : 100000;
    p.fast_math = fast_math;
    return std::make_unique<Adapter<BarnesHutLoop>>(c, p, "barneshut, " + std::to_string(p.n) + " bodies");
  }
  throw UsageError("no loop workload '" + name + "': mandelbrot, nbody, spmv or barneshut");
}

}  // namespace hetflow::workloads
