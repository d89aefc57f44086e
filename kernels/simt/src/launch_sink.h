// Launch records of the CPU runtime: who is told about a finished launch, and under what name.
#pragma once

#include "simt/simt_cpu.h"

namespace simt::detail {

// True when a sink is installed; launch_impl times a launch only then.
bool launch_sink_installed();
// Tells the installed sink about one finished launch of `d` that took `seconds` of wall time.
void report_launch(const LaunchDesc& d, double seconds);

}  // namespace simt::detail
