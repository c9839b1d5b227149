#pragma once
// Shared helpers for the engine's integration tests (real OpenCL device: PoCL here).
#include <doctest/doctest.h>
#include <hetflow/hetflow.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace test {

inline hetflow::ControllerOptions options(hetflow::Policy p, unsigned kernel_queues = 1) {
  hetflow::ControllerOptions o;
  o.policy = p;
  o.kernel_queues = kernel_queues;
  o.record = true;
  return o;
}

template <class T>
void fill(hetflow::Tile<T>& t, T v) {
  std::fill(t.data(), t.data() + t.size(), v);
}

template <class T>
bool all_equal(const hetflow::Tile<T>& t, T v) {
  return std::all_of(t.data(), t.data() + t.size(), [&](T x) { return x == v; });
}

// change(t, v) of 000 ch. 5: a host task that sets every element of t to v.
template <class T>
void change(hetflow::Controller& c, hetflow::Tile<T>& t, T v) {
  c.host_task("change(" + t.name() + ")", [t, v]() mutable { fill(t, v); }, hetflow::out(t));
}

struct Interval {
  std::int64_t start = -1, end = -1;
  bool overlaps(const Interval& o) const { return start < o.end && o.start < end; }
};

// The nth record named `name` (device times from OpenCL profiling).
inline Interval interval(const std::vector<hetflow::RequestRecord>& recs, const std::string& name, int nth = 0) {
  for (const auto& r : recs)
    if (r.name == name && nth-- == 0) {
      REQUIRE_MESSAGE(r.start_ns >= 0, "no profiling times for " << name);
      return {r.start_ns, r.end_ns};
    }
  FAIL("no record named " << name);
  return {};
}

inline std::string policy_name(hetflow::Policy p) { return hetflow::to_string(p); }

// The set-up of DESIGN.md Appendix A's cases: a recording controller and K(in a, out b), one
// work-group copying a into b `repeat` passes long (kernels_cl/hetflow_test.cl: copy_loop).
struct AppendixCase {
  explicit AppendixCase(hetflow::Policy p) : c(options(p, 1)), k(c.kernel("hetflow_test.cl", "copy_loop")) {}
  void K(hetflow::Tile<float>& a, hetflow::Tile<float>& b, int repeat) {
    c.launch(k, hetflow::Range(64).local(64), hetflow::in(a), hetflow::out(b), int(a.size()), repeat);
  }
  hetflow::Controller c;
  hetflow::Kernel k;
};

}  // namespace test
