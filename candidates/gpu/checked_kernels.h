// The production kernels in their CHECKED flavour (kernels/checked_module.cpp): a module of its own
// that driftscope dlopens when a run asks for the hazard checker, so that the `simt` candidate's
// launches are checked access by access (static and dynamic shared memory, global memory between
// blocks, both accesses' file:line) instead of through page faults (docs/simt.md).
#pragma once

#include <string>

#include "kernels.h"

namespace ds::gpu {

// The checked module's kernel table, its runtime given this run's SIMT settings and launch sinks
// (launch_sinks::install_in_library): loaded once per process, refreshed on every call. Null, with
// the reason in `why`, where this build has no checked module (a sanitizer build) or it cannot be
// loaded.
const dsk::KernelTable* checked_kernels(std::string& why);

}  // namespace ds::gpu
