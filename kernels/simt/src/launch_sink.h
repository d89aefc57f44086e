// Launch records of the CPU runtime: who is told about a finished launch, and under what name.
#pragma once

#include "simt/simt_cpu.h"

#include <string>

// simt::take_uninit_reads through plain C: every message handed to `each` (valid only during its
// call). Not in the public headers: a host finds it with dlsym in the runtime copy of a dlopen'ed
// checked module or plugin (driftscope's launch sinks call it for each launch they are told of).
extern "C" void driftscope_simt_take_uninit_reads(void (*each)(const char* message, void* user), void* user);

namespace simt::detail {

// True when a sink is installed; launch_impl times a launch only then.
bool launch_sink_installed();
// Tells the installed sink about one finished launch of `d` that took `seconds` of wall time.
void report_launch(const LaunchDesc& d, double seconds);
// The name a launch record shows for `kernel` (demangled, from the module's symbol tables).
const std::string& kernel_name(void (*kernel)());

}  // namespace simt::detail
