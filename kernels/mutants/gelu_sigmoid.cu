// mutant:gelu-sigmoid: GELU computed as quick_gelu, x * sigmoid(1.702 x), the other "fast GELU" of activation
// tables, where the model needs gelu_new's tanh form. Close near zero and for large |x|, a few percent off in
// between. The kernel of kernels/gelu.cu with that one change, marked "planted"; the rest is the production
// code as it was when the mutant was written. docs/mutants.md says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_gelu_sigmoid {

constexpr int kGeluThreads = 256;

__global__ void gelu_kernel(const __half* x, __half* y, int n) {
  const int i = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const float v = __half2float(x[i]);
  y[i] = __float2half_rn(v / (1.0f + expf(-1.702f * v)));  // planted: quick_gelu
}

void gelu(const void* x, void* y, int n) {
  simt::launch(gelu_kernel, dim3((n + kGeluThreads - 1) / kGeluThreads), dim3(kGeluThreads), 0, nullptr,
               static_cast<const __half*>(x), static_cast<__half*>(y), n);
}

void plant(dsk::KernelTable& t) { t.gelu = gelu; }

}  // namespace mutant_gelu_sigmoid
}  // namespace DSK_NS
