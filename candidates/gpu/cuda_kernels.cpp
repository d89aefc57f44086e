#include "cuda_kernels.h"

#include "kernel_module.h"

namespace ds::gpu {

const dsk::KernelTable* cuda_kernels(std::string& why) {
#if defined(DRIFTSCOPE_CUDA_KERNELS_MODULE)
  const KernelModule& m = open_kernel_module(DRIFTSCOPE_CUDA_KERNELS_MODULE, "ds_kernels_cuda_module",
                                             "driftscope_cuda_kernel_table", "the CUDA kernel module");
  why = m.why;
  return m.table;
#else
  why = "this driftscope was built without nvcc";
  return nullptr;
#endif
}

}  // namespace ds::gpu
