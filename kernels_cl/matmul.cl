// C = A * B for n x n row-major float matrices (index row*n + col), n a multiple of TILE.
//
// Tiled in local memory with register blocking along the rows: each work-group computes one
// TILE x TILE block of C; each work-item computes WPT elements of one column of that block, rows
// ty, ty + TILE/WPT, ty + 2*TILE/WPT, ... (so a work-group is TILE x TILE/WPT work-items).
//
// LAUNCH GEOMETRY (2-D NDRange; dimension 0 = columns, dimension 1 = rows):
//     global = (n, n / WPT)
//     local  = (TILE, TILE / WPT)
// With the defaults (TILE 16, WPT 4): global (n, n/4), local (16, 4); n must be a multiple of 16.
// The kernel declares reqd_work_group_size(TILE, TILE/WPT, 1), so a host can read the local size
// from CL_KERNEL_COMPILE_WORK_GROUP_SIZE (lx, ly, 1) and derive TILE = lx, WPT = lx / ly and the
// global size (n, n * ly / lx) without knowing the macros; any other local size is rejected by
// clEnqueueNDRangeKernel with CL_INVALID_WORK_GROUP_SIZE.
// Override with -DTILE=... and/or -DWPT=... (WPT must divide TILE).
//
// Determinism: every C element is accumulated by one work-item in ascending k (tile by tile, and
// k ascending inside each tile), so the result does not depend on scheduling; it depends only on
// the device's compiler (e.g. whether it contracts the multiply-add into an fma).

#ifndef TILE
#define TILE 16
#endif
#ifndef WPT
#define WPT 4
#endif
#if (TILE % WPT) != 0
#error "matmul.cl: WPT must divide TILE"
#endif
#define MATMUL_RTS (TILE / WPT) /* local size in dimension 1 */

__kernel __attribute__((reqd_work_group_size(TILE, MATMUL_RTS, 1))) void matmul_tiled(__global const float* A,
                                                                                     __global const float* B,
                                                                                     __global float* C, int n) {
  __local float As[TILE][TILE];  // As[r][k] = A[row_base + r][t + k]
  __local float Bs[TILE][TILE];  // Bs[k][c] = B[t + k][col_base + c]

  const int tx = (int)get_local_id(0);
  const int ty = (int)get_local_id(1);
  const int col = (int)get_group_id(0) * TILE + tx;
  const int row_base = (int)get_group_id(1) * TILE;
  const size_t nn = (size_t)n;

  float acc[WPT];
#pragma unroll
  for (int w = 0; w < WPT; ++w) acc[w] = 0.0f;

  for (int t = 0; t < n; t += TILE) {
    // Coalesced loads: consecutive tx read consecutive addresses of one row of A and of B.
#pragma unroll
    for (int w = 0; w < WPT; ++w) {
      const int r = ty + w * MATMUL_RTS;
      As[r][tx] = A[(size_t)(row_base + r) * nn + (size_t)(t + tx)];
      Bs[r][tx] = B[(size_t)(t + r) * nn + (size_t)col];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

#pragma unroll
    for (int k = 0; k < TILE; ++k) {
      const float b = Bs[k][tx];
#pragma unroll
      for (int w = 0; w < WPT; ++w) acc[w] += As[ty + w * MATMUL_RTS][k] * b;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

#pragma unroll
  for (int w = 0; w < WPT; ++w) C[(size_t)(row_base + ty + w * MATMUL_RTS) * nn + (size_t)col] = acc[w];
}
