// What the grid driver (launch.cpp) needs from the fiber scheduler (runtime.cpp).
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "hazards.h"
#include "simt/simt_cpu.h"

namespace simt::detail {

// Runs block `linear_block` of `d` on the calling OS thread's scheduler. False when it failed:
// then `error` (a diagnostic) or `exception` (thrown by kernel code) says why.
bool run_block(const LaunchDesc& d, const Config& cfg, std::uint64_t linear_block, std::string& error,
               std::exception_ptr& exception);
// Who is running on this host thread's scheduler, for the hazard checkers.
AccessCtx current_access_ctx();
// Whether the calling host thread runs a thread of a block (kernel code, on a fiber).
bool running_kernel_thread();
// Stops the running block from its running thread, which never resumes (memcheck.h).
[[noreturn]] void fail_running_thread(const char* error);
// The shared-memory hazards the calling host thread's scheduler found since the last call.
HazardReport take_hazards();

}  // namespace simt::detail
