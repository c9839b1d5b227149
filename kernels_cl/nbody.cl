// N-body all pairs (tools/workloads/nbody_loop.hpp): work-item i sums the acceleration of every body
// on body i, in body order. Built exact (default) the operations are the host's: contraction off
// and, with -cl-fp32-correctly-rounded-divide-sqrt, a correctly rounded 1/sqrt; built with
// -DHETFLOW_FAST_MATH -cl-fast-relaxed-math it uses rsqrt and may fuse.
#ifdef HETFLOW_FAST_MATH
#define INV_SQRT(x) rsqrt(x)
#else
#pragma OPENCL FP_CONTRACT OFF
#define INV_SQRT(x) (1.0f / sqrt(x))
#endif

__kernel void nbody_accel(__global const float4* pos_mass, __global float4* acc, int n, int limit, float eps2) {
  const int i = get_global_id(0);
  if (i >= limit) return;  // the chunk is rounded up to the work-group size; the tail is the next chunk's
  const float4 p = pos_mass[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float4 q = pos_mass[j];
    const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
    const float inv = INV_SQRT(((dx * dx + dy * dy) + dz * dz) + eps2);
    const float s = q.w * ((inv * inv) * inv);
    ax = ax + dx * s;
    ay = ay + dy * s;
    az = az + dz * s;
  }
  acc[i] = (float4)(ax, ay, az, 0.0f);
}
