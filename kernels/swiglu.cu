// SwiGLU, one thread per element of [T, F]:
//   act[t, i] = half(silu(g) * u),  g = gate[t, i] (+ b_gate[i]),  u = up[t, i] (+ b_up[i])
// gate / up are f16 with row stride ld (F, or 2F when they sit in one packed [gate | up]
// buffer). The bias is optional: a checkpoint whose GEMV leaves gate/up unbiased passes it
// with has_bias; ours adds it in the GEMV epilogue (in f32, before the cast) and passes
// has_bias = false.
#include "common.cuh"

namespace DSK_NS {

constexpr int kSwigluThreads = 256;

__global__ void swiglu_kernel(const __half* __restrict__ gate, const __half* __restrict__ up,
                              const float* __restrict__ bg, const float* __restrict__ bu, int has_bias,
                              __half* __restrict__ act, int T, int F, int ld) {
  const int idx = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  if (idx >= T * F) return;
  const int t = idx / F, i = idx % F;
  const std::size_t in = static_cast<std::size_t>(t) * ld + i;
  float g = __half2float(gate[in]);
  float u = __half2float(up[in]);
  if (has_bias) {
    g += bg != nullptr ? bg[i] : 0.0f;
    u += bu != nullptr ? bu[i] : 0.0f;
  }
  act[idx] = __float2half_rn(g / (1.0f + expf(-g)) * u);
}

void swiglu(const void* gate, const void* up, const float* b_gate, const float* b_up, bool has_bias,
            void* act, int T, int F, int ld) {
  const int n = T * F;
  simt::launch(swiglu_kernel, dim3((n + kSwigluThreads - 1) / kSwigluThreads), dim3(kSwigluThreads), 0,
               nullptr, static_cast<const __half*>(gate), static_cast<const __half*>(up), b_gate, b_up,
               has_bias ? 1 : 0, static_cast<__half*>(act), T, F, ld);
}

}  // namespace DSK_NS
