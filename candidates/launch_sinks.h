// Connects the backends' launch reports to the harness's launch log (harness/api/launch_log.h).
#pragma once

#include <string>
#include <string_view>

namespace ds::launch_sinks {

// Records for the kernels of a dsk::KernelTable backend ("simt": install_local; "cuda": CUPTI, with
// a warning on stderr when CUPTI cannot record). Called by the candidate's load(), in the process
// that will launch.
void start(std::string_view backend);
// The SIMT runtime linked into this executable (the simt candidate and its mutants). Idempotent.
void install_local();
// The SIMT runtime copy inside a dlopen'ed plugin, found by its exported C setter: plugins built
// with driftscope_add_simt_kernel get records with no code of their own. False when the library
// has no SIMT runtime (a plugin of plain C++ launches nothing).
bool install_in_library(void* dl_handle);
// CUPTI's activity API for kernels launched on a GPU in this process. Call in the process that
// owns the CUDA context (the candidate's child), before its first launch. Returns why not when
// CUPTI cannot record (no CUPTI in this build, or CUPTI refused), empty when recording.
std::string start_device_recording();

}  // namespace ds::launch_sinks
