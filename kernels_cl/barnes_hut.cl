// Barnes-Hut force walk (tools/workloads/barnes_hut_loop.hpp, tree layout in barnes_hut_tree.hpp):
// work-item i walks the threaded octree for body i: a cell whose centre of mass is nearer than its
// open distance is opened (go to its first child), anything else is used whole (go to its next).
// Built exact (default) the operations are the host's; -DHETFLOW_FAST_MATH -cl-fast-relaxed-math
// uses rsqrt and may fuse.
#ifdef HETFLOW_FAST_MATH
#define INV_SQRT(x) rsqrt(x)
#else
#pragma OPENCL FP_CONTRACT OFF
#define INV_SQRT(x) (1.0f / sqrt(x))
#endif

__kernel void bh_force(__global const float4* pos_mass, __global const float4* node_mass,
                       __global const float* node_open2, __global const int2* links, __global float4* acc,
                       int limit, float eps2) {
  const int i = get_global_id(0);
  if (i >= limit) return;  // the chunk is rounded up to the work-group size; the tail is the next chunk's
  const float4 p = pos_mass[i];
  const int self = -i - 1;  // the leaf holding body i
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  int k = 0;
  while (k >= 0) {
    const float4 q = node_mass[k];
    const int2 l = links[k];
    const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
    const float d2 = (dx * dx + dy * dy) + dz * dz;
    if (l.x >= 0 && d2 < node_open2[k]) {
      k = l.x;
      continue;
    }
    if (l.x != self) {
      const float inv = INV_SQRT(d2 + eps2);
      const float s = q.w * ((inv * inv) * inv);
      ax = ax + dx * s;
      ay = ay + dy * s;
      az = az + dz * s;
    }
    k = l.y;
  }
  acc[i] = (float4)(ax, ay, az, 0.0f);
}
