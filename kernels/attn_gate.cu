// Output gate of Qwen3-Next's full-attention layers (reference-math.md §1.5), one thread per
// element of n = T * n_q * head_dim:
//   y[i] = half(attn[i] * sigmoid(gate[i]))
// gate is the second half of each head's q_proj output ([q | gate] per head), split off by
// the projection step, so both inputs are packed [T, n_q * head_dim] rows. The sigmoid is
// taken in f32 on the f16 gate, which is what the attn_gate stage stores.
#include "common.cuh"

namespace DSK_NS {

constexpr int kAttnGateThreads = 256;

__global__ void attn_gate_kernel(const __half* __restrict__ attn, const __half* __restrict__ gate,
                                 __half* __restrict__ y, int n) {
  const int i = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const float g = __half2float(gate[i]);
  const float a = __half2float(attn[i]);
  y[i] = __float2half_rn(a / (1.0f + expf(-g)));
}

void attn_gate(const void* attn, const void* gate, void* y, int n) {
  simt::launch(attn_gate_kernel, dim3((n + kAttnGateThreads - 1) / kAttnGateThreads), dim3(kAttnGateThreads),
               0, nullptr, static_cast<const __half*>(attn), static_cast<const __half*>(gate),
               static_cast<__half*>(y), n);
}

}  // namespace DSK_NS
