#pragma once
// Oclgrind (Debian `oclgrind`) simulates an OpenCL device and reports every invalid memory access
// with the kernel, the work-item and the address: the way to find a kernel that writes out of
// bounds, which on PoCL's CPU device kills the process. Debian installs its ICD library but does
// not register it with the ICD loader, so a device selection that names it registers it here, if
// no OpenCL platform has been listed in this process yet (the loader reads its vendor list once).
#include <string>
#include <string_view>

namespace hetflow::detail {

// The installed Oclgrind ICD library, or "" if there is none.
std::string oclgrind_icd_library();

// If `selection` names Oclgrind and the loader has not started: points OCL_ICD_VENDORS at a
// directory holding the vendors already registered plus Oclgrind. Returns why it could not, or "".
std::string register_oclgrind_if_named(std::string_view selection, bool loader_started);

// Once the loader has read that directory (its first listing of platforms, which it never repeats):
// removes it and puts OCL_ICD_VENDORS back as it was. Nothing when no directory was made.
void remove_oclgrind_registration() noexcept;

}  // namespace hetflow::detail
