// The production kernels compiled by nvcc (the cuda candidate), from kernels/cuda_module.cpp: a
// module dlopen'ed when a run first asks for `cuda`, so that building driftscope runs no nvcc.
#pragma once

#include <string>

#include "kernels.h"

namespace ds::gpu {

// The nvcc kernels' table, or null with the reason in `why` where the module cannot be had.
const dsk::KernelTable* cuda_kernels(std::string& why);

}  // namespace ds::gpu
