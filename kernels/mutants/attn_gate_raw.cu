// mutant:attn-gate-raw: Qwen3-Next's attention output gate multiplied in as stored, its sigmoid forgotten.
// The kernel of kernels/attn_gate.cu with that one change, marked "planted"; the rest is the production code
// as it was when the mutant was written. docs/mutants.md says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_attn_gate_raw {

constexpr int kAttnGateThreads = 256;

__global__ void attn_gate_kernel(const __half* __restrict__ attn, const __half* __restrict__ gate,
                                 __half* __restrict__ y, int n) {
  const int i = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const float g = __half2float(gate[i]);
  const float a = __half2float(attn[i]);
  y[i] = __float2half_rn(a * g);  // planted: no sigmoid
}

void attn_gate(const void* attn, const void* gate, void* y, int n) {
  simt::launch(attn_gate_kernel, dim3((n + kAttnGateThreads - 1) / kAttnGateThreads), dim3(kAttnGateThreads),
               0, nullptr, static_cast<const __half*>(attn), static_cast<const __half*>(gate),
               static_cast<__half*>(y), n);
}

void plant(dsk::KernelTable& t) { t.attn_gate = attn_gate; }

}  // namespace mutant_attn_gate_raw
}  // namespace DSK_NS
