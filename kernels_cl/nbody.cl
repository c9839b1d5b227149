// N-body all pairs (tools/workloads/nbody_loop.hpp): the `lanes` work-items of a row of the work-group
// share body i: lane l sums the bodies j = l, l + lanes, ... in order, then lane 0 adds the lanes'
// partial sums in lane order (so the host can repeat it), which lets a chunk of c bodies fill
// c * lanes work-items. Built exact (default) the operations are the host's: contraction off and,
// with -cl-fp32-correctly-rounded-divide-sqrt, a correctly rounded 1/sqrt; built with
// -DHETFLOW_FAST_MATH -cl-fast-relaxed-math it uses rsqrt and may fuse.
#ifdef HETFLOW_FAST_MATH
#define INV_SQRT(x) rsqrt(x)
#else
#pragma OPENCL FP_CONTRACT OFF
#define INV_SQRT(x) (1.0f / sqrt(x))
#endif

// Launch: global (lanes, bodies rounded up to the work-group's rows), offset (0, chunk begin),
// local (lanes, rows); `partial` holds one float4 per work-item.
__kernel void nbody_accel(__global const float4* pos_mass, __global float4* acc, __local float4* partial, int n,
                          int limit, float eps2) {
  const int lane = get_local_id(0), lanes = get_local_size(0);
  const int i = get_global_id(1);
  const int slot = get_local_id(1) * lanes + lane;
  // Rows past the chunk's end (the rounded tail belongs to the next chunk) still reach the barrier.
  const bool mine = i < limit;
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  if (mine) {
    const float4 p = pos_mass[i];
    for (int j = lane; j < n; j += lanes) {
      const float4 q = pos_mass[j];
      const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
      const float inv = INV_SQRT(((dx * dx + dy * dy) + dz * dz) + eps2);
      const float s = q.w * ((inv * inv) * inv);
      ax = ax + dx * s;
      ay = ay + dy * s;
      az = az + dz * s;
    }
  }
  partial[slot] = (float4)(ax, ay, az, 0.0f);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lane != 0 || !mine) return;
  float sx = 0.0f, sy = 0.0f, sz = 0.0f;
  for (int l = 0; l < lanes; ++l) {
    const float4 q = partial[slot + l];
    sx = sx + q.x;
    sy = sy + q.y;
    sz = sz + q.z;
  }
  acc[i] = (float4)(sx, sy, sz, 0.0f);
}
