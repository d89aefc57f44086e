// Launch records of the CPU runtime: who is told about a finished launch, and under what name.
#pragma once

#include "simt/simt_cpu.h"

#include <string>

namespace simt::detail {

// True when a sink is installed; launch_impl times a launch only then.
bool launch_sink_installed();
// Tells the installed sink about one finished launch of `d` that took `seconds` of wall time.
void report_launch(const LaunchDesc& d, double seconds);
// The name a launch record shows for `kernel` (demangled, from the module's symbol tables).
const std::string& kernel_name(void (*kernel)());

}  // namespace simt::detail
