#include "cuda_kernels.h"

#include "kernel_module.h"

namespace ds::gpu {

namespace {

std::string& module_error() {
  static std::string why;
  return why;
}
std::string unavailable_error() { return module_error(); }

}  // namespace

const dsk::KernelTable& cuda_kernels() {
  static const dsk::KernelTable table = [] {
#if defined(DRIFTSCOPE_CUDA_KERNELS_MODULE)
    const KernelModule m = open_kernel_module(DRIFTSCOPE_CUDA_KERNELS_MODULE, "ds_kernels_cuda_module",
                                              "driftscope_cuda_kernel_table", "the CUDA kernel module");
    if (m.table != nullptr) return *m.table;
    module_error() = m.why;
#else
    module_error() = "this driftscope was built without nvcc";
#endif
    dsk::KernelTable none{};
    none.backend = "cuda";
    none.device_error = unavailable_error;
    return none;
  }();
  return table;
}

}  // namespace ds::gpu
