// The production kernels compiled by nvcc (the cuda candidate), from kernels/cuda_module.cpp: a
// module dlopen'ed when a run first asks for `cuda`, so that building driftscope runs no nvcc.
#pragma once

#include "kernels.h"

namespace ds::gpu {

// The nvcc kernels' table; where the module cannot be had, a table that runs nothing and whose
// device_error() says why (the candidate then reports itself unavailable).
const dsk::KernelTable& cuda_kernels();

}  // namespace ds::gpu
