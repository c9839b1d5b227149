// What the engine recorded, turned into RequestRecords for dumps and traces.
#include "engine.hpp"

namespace hetflow::detail {

std::vector<RequestRecord> Engine::records() const {
  RequestList snapshot;
  {
    std::lock_guard lock(history_mutex_);
    snapshot = history_;
  }
  std::vector<RequestRecord> out;
  out.reserve(snapshot.size());
  for (const auto& r : snapshot) {
    RequestRecord rec;
    rec.id = r->id;
    rec.kind = to_string(r->kind);
    rec.name = r->name;
    if (r->kind == Kind::host) {
      std::lock_guard lock(r->m);
      rec.lane = r->worker.empty() ? "host" : r->worker;
    } else {
      rec.lane = lane_name(*r);
    }
    rec.submit_ns = r->submit_ns;
    rec.start_ns = r->start_ns;
    rec.end_ns = r->end_ns;
    rec.enqueue_ns = r->enqueue_ns;
    {
      std::lock_guard lock(r->m);
      rec.in_edges = r->edges;
    }
    rec.flow_node = r->flow_node;
    Status s = r->status.load();
    cl_event ev = r->event.load();
    if (ev) {
      cl_int st = CL_QUEUED;
      if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr) != CL_SUCCESS) st = -1;
      if (s == Status::pending && st == CL_COMPLETE) s = Status::done;
      if (s == Status::pending && st < 0) s = Status::failed;
      if (st == CL_COMPLETE) device_times(ev, rec.start_ns, rec.end_ns);
    }
    rec.status = to_string(s);
    {
      std::lock_guard lock(r->m);
      rec.error = r->error;
    }
    out.push_back(std::move(rec));
  }
  return out;
}

bool Engine::device_times(cl_event ev, std::int64_t& start_ns, std::int64_t& end_ns) const {
  if (!profiling) return false;
  cl_ulong start = 0, end = 0;
  if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) != CL_SUCCESS ||
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) != CL_SUCCESS)
    return false;
  start_ns = std::int64_t(start) + device_to_host_offset_ns_;
  end_ns = std::int64_t(end) + device_to_host_offset_ns_;
  return true;
}

std::string Engine::topology_dot() const {
  // The controller's own flow graph: the nodes built in the constructor and how messages move.
  std::string dot =
      "digraph hetflow_controller {\n"
      "  rankdir=LR;\n"
      "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eeeeee\", fontname=\"Helvetica\"];\n"
      "  user [label=\"user thread\\n(submit)\", shape=ellipse, fillcolor=white];\n"
      "  dispatcher [label=\"dispatcher\\nmultifunction_node, serial\\nhazards in program order\"];\n"
      "  streaming [label=\"OpenCL streaming\\nasync_node, serial\\nclEnqueue* with wait lists\", "
      "fillcolor=\"#cfe2ff\"];\n"
      "  receiver [label=\"callback receiver\\nfunction_node, unlimited\", fillcolor=\"#cfe2ff\"];\n"
      "  host [label=\"host tasks\\nfunction_node, unlimited\", fillcolor=\"#d1e7dd\"];\n"
      "  waiters [label=\"waiters\\nwait(t) / wait_all\", shape=ellipse, fillcolor=white];\n";
  dot += "  device [label=\"" + choice.device.name + "\\n";
  if (policy == Policy::sync)
    dot += "1 queue (sync)";
  else
    dot += "H2D, D2H, " + std::to_string(kernel_queue_count) + " kernel queue(s)";
  dot += "\", shape=cylinder, fillcolor=\"#fff3cd\"];\n";
  // Edges of the flow graph, as made (solid), then the hand-offs the engine's code makes by
  // try_put or by calling the driver (dashed, dotted): the nodes are not wired for them.
  for (const auto& w : wiring_) dot += std::string("  ") + w.from + " -> " + w.to + " [label=\"" + w.label + "\"];\n";
  dot +=
      "  user -> dispatcher [label=\"try_put\"];\n"
      "  dispatcher -> host [label=\"ready host tasks\", style=dashed];\n"
      "  dispatcher -> waiters [label=\"ready waits\", style=dashed];\n"
      "  streaming -> device [label=\"enqueue\"];\n"
      "  device -> streaming [label=\"clSetEventCallback\\n(to its gateway)\", style=dotted];\n"
      "  receiver -> host [label=\"release\", style=dashed];\n"
      "  receiver -> waiters [label=\"release\", style=dashed];\n"
      "  receiver -> streaming [label=\"held-back requests\", style=dashed];\n"
      "  host -> host [label=\"release\", style=dashed];\n"
      "  host -> streaming [label=\"held-back requests\", style=dashed];\n"
      "}\n";
  return dot;
}

}  // namespace hetflow::detail
