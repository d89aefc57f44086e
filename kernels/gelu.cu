// GELU, tanh approximation (GPT-2's gelu_new), one thread per element of n:
//   y[i] = half(0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))),  x = float(in[i])
// Evaluated in f32 with tanhf, not a half-precision table: ggml's f16 lookup differs from
// gelu_new by about 1e-3 relative (docs/reference-math.md §1.6). The c_fc bias is added by
// the GEMV before this kernel, so the input is the fc stage as is. In place is allowed.
#include "common.cuh"

namespace DSK_NS {

constexpr int kGeluThreads = 256;

__global__ void gelu_kernel(const __half* x, __half* y, int n) {
  const int i = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const float v = __half2float(x[i]);
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  y[i] = __float2half_rn(0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v))));
}

void gelu(const void* x, void* y, int n) {
  simt::launch(gelu_kernel, dim3((n + kGeluThreads - 1) / kGeluThreads), dim3(kGeluThreads), 0, nullptr,
               static_cast<const __half*>(x), static_cast<__half*>(y), n);
}

}  // namespace DSK_NS
