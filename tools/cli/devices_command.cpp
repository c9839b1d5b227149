#include <hetflow/device.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "commands.hpp"

namespace hetflow::cli {

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List OpenCL platforms and devices, and which one is the default and why");
  cmd->callback([] {
    // Chosen first: a HETFLOW_DEVICE naming Oclgrind registers it, which only the first OpenCL call can.
    const auto chosen = select_device();
    const auto devices = list_devices();
    unsigned last_platform = ~0u;
    for (const auto& d : devices) {
      if (d.platform_index != last_platform) {
        std::printf("Platform %u: %s (%s)\n", d.platform_index, d.platform_name.c_str(), d.platform_version.c_str());
        last_platform = d.platform_index;
      }
      const bool is_default =
          d.platform_index == chosen.device.platform_index && d.device_index == chosen.device.device_index;
      std::printf("  %s %-4s %-11s %s\n", is_default ? "*" : " ", d.id().c_str(), d.type_name().c_str(),
                  d.name.c_str());
      std::printf("         compute units %u, global memory %.1f GiB, local memory %llu KiB, max work-group %zu\n",
                  d.compute_units, double(d.global_mem_bytes) / (1024.0 * 1024.0 * 1024.0),
                  (unsigned long long)(d.local_mem_bytes / 1024), d.max_work_group_size);
      std::printf("         %s, driver %s, host-unified memory: %s\n", d.version.c_str(), d.driver_version.c_str(),
                  d.host_unified_memory ? "yes" : "no");
    }
    std::printf("\nDefault device (*): %s %s — %s\n", chosen.device.id().c_str(), chosen.device.name.c_str(),
                chosen.reason.c_str());
  });
}

}  // namespace hetflow::cli
