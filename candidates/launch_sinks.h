// Connects the backends' launch reports to the harness's launch log (harness/api/launch_log.h).
#pragma once

#include <string>
#include <string_view>

namespace ds::launch_sinks {

// Records for the kernels of a dsk::KernelTable backend ("simt": the SIMT runtime linked into this
// executable; "cuda": CUPTI's activity API, with a warning on stderr when CUPTI cannot record).
// Called by the candidate's load(), in the process that will launch. Idempotent.
void start(std::string_view backend);
// The SIMT runtime copy inside a dlopen'ed plugin, found by its exported C setter: plugins built
// with driftscope_add_simt_kernel get records with no code of their own. False when the library
// has no SIMT runtime (a plugin of plain C++ launches nothing).
bool install_in_library(void* dl_handle);

}  // namespace ds::launch_sinks
