// The production kernels (ds_kernels) compiled by nvcc, as a module of their own: driftscope
// dlopens it when a run asks for the cuda candidate (candidates/gpu/cuda_kernels.h), so that
// building driftscope, which every user does first, runs no nvcc (docs/build.md).
#include "kernels.h"

extern "C" [[gnu::visibility("default")]] const dsk::KernelTable* driftscope_cuda_kernel_table() {
  return &dsk_cuda::table();
}
