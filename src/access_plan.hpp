#pragma once
// Which images a request touches, how, and under which slot name (the slots of
// docs/architecture.md, "Hazards"): the mapping from a request to the hazard tracker's accesses.
#include <hetflow/access.hpp>

#include "dependency_tracker.hpp"
#include "request.hpp"

namespace hetflow::detail {

struct AccessPlan {
  Image image;
  bool reads, writes;
  const char* slot;
};

// Fills `out` and returns how many entries it used (at most 2).
inline int plan_accesses(Kind kind, const Access& a, AccessPlan out[2]) {
  const Role role = a.role;
  const bool reads = role != Role::out, writes = role != Role::in;
  switch (kind) {
    case Kind::h2d:  // reads the host image, writes the device image
      out[0] = {Image::host, true, false, "offloading_write"};
      out[1] = {Image::device, false, true, "offloading_write"};
      return 2;
    case Kind::d2h:  // reads the device image, writes the host image
      out[0] = {Image::device, true, false, "offloading_read"};
      out[1] = {Image::host, false, true, "offloading_read"};
      return 2;
    case Kind::kernel:
      out[0] = {Image::device, reads, writes,
                role == Role::in    ? "kernel_read"
                : role == Role::out ? "kernel_write"
                                    : "kernel_read+write"};
      return 1;
    case Kind::host:
      if (a.device_image) {  // a completion hook on a device image (Controller::on_ready): in() only
        out[0] = {Image::device, true, false, "hook_read"};
        return 1;
      }
      out[0] = {Image::host, reads, writes,
                role == Role::in    ? "host_read"
                : role == Role::out ? "host_write"
                                    : "host_read+write"};
      return 1;
    default:
      return 0;
  }
}

}  // namespace hetflow::detail
