// CSR sparse matrix-vector product over an R-MAT power-law matrix, a heterogeneous loop workload
// (issue 15; research next-features A6 #4): iteration i computes y[i] = row i . x. Irregular
// (nonzeros per row follow a power law, the heaviest rows at small indices), memory-bound. The
// kernel gives a row 32 work-items (lanes) on a GPU, each adding every 32nd product in column order,
// then adds the lanes pairwise; on a CPU device and in the CPU body a row's loop adds in that same
// order; contraction is off everywhere, so y is identical on every side.
#pragma once
#include <hetflow/controller.hpp>

#include <cstdint>
#include <vector>

#include "workloads/loop_common.hpp"

namespace hetflow::workloads {

// An R-MAT matrix in CSR form (Chakrabarti et al. 2004): 2^scale rows and columns; edge_factor *
// 2^scale edges, each placed by `scale` quadrant choices with probabilities a, b, c, 1-a-b-c;
// duplicates merged, so rows hold fewer nonzeros than edge_factor on average. Deterministic: edge
// e's choices come from a counter-based hash of (seed, e), whatever the number of threads.
struct Csr {
  std::size_t rows = 0;
  std::vector<std::int32_t> row_ptr, cols;  // row_ptr: rows + 1 entries
  std::vector<float> vals;
};
struct RmatParams {
  unsigned scale = 12;
  unsigned edge_factor = 16;
  double a = 0.57, b = 0.19, c = 0.19;  // Graph500's
  std::uint32_t seed = 1;
};
Csr make_rmat(const RmatParams& p);

class SpmvLoop {
 public:
  using Params = RmatParams;

  SpmvLoop(Controller& c, const Params& p);
  std::size_t size() const { return rows_; }
  std::size_t nonzeros() const { return nnz_; }
  // The matrix is the loop's constants (moved once), x a read (moved each call, as a solver's
  // iterate would be).
  std::vector<Access> reads() const { return {in(x_)}; }
  std::vector<Access> constants() const { return {in(row_ptr_), in(cols_), in(vals_)}; }
  std::vector<Access> writes(std::size_t begin, std::size_t end) const { return {out(span_of(y_, begin, end))}; }
  void cpu(std::size_t begin, std::size_t end);
  void device(Controller& c, std::size_t begin, std::size_t end);
  // The kernel a device chunk runs (the same sums): by default a row per work-item on a CPU device,
  // a row per 32 work-items on any other; a test picks one to run both on one device.
  enum class DeviceKernel { by_device, lanes, serial };
  void set_device_kernel(DeviceKernel k) { device_kernel_ = k; }
  void before_step() {}
  void after_step() {}
  std::vector<Access> before_step_accesses() const { return {}; }
  std::vector<Access> after_step_accesses() const { return {}; }

  void upload(Controller& c);
  void fetch(Controller& c, std::size_t begin, std::size_t end) { c.move_from(span_of(y_, begin, end)); }
  void clear_output();  // NaN, which no iteration writes
  const Tile<float>& output() const { return y_; }
  // y by a plain sequential loop over the rows.
  std::vector<float> reference() const;
  LoopCheck check(const std::vector<float>& ref) const;  // exact

 private:
  std::size_t rows_, nnz_;
  Tile<std::int32_t> row_ptr_, cols_;
  Tile<float> vals_, x_, y_;
  Kernel kernel_, serial_kernel_;  // kernels_cl/spmv.cl's spmv_csr and spmv_csr_serial
  DeviceKernel device_kernel_ = DeviceKernel::by_device;
};

}  // namespace hetflow::workloads
