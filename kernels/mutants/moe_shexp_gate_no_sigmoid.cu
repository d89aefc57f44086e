// mutant:moe-shexp-gate-no-sigmoid: Qwen3-Next's shared-expert gate taken as its raw logit, the sigmoid
// forgotten: the logit is stored as shexp_gate and scales the shared expert in ffn_out. The kernel of
// kernels/moe_shexp.cu with that one change, marked "planted"; the rest is the production code as it
// was when the mutant was written. docs/mutants.md says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_moe_shexp_gate_no_sigmoid {

template <class W>
__global__ void moe_shexp_gate_add_kernel(const W* __restrict__ Wg, const __half* __restrict__ x,
                                          const __half* __restrict__ moe_out,
                                          const __half* __restrict__ shexp_out, __half* __restrict__ gate,
                                          __half* __restrict__ ffn_out, __half* __restrict__ resid, int D) {
  SIMT_DYNAMIC_SHARED(float, xs);
  float& g = xs[D];
  const int t = static_cast<int>(blockIdx.x);
  stage_rows_f32(x, t, 1, D, xs);
  const int tid = static_cast<int>(threadIdx.x);
  if (tid < 32) {
    const float u = warp_dot(Wg, xs, D, tid);
    if (tid == 0) {
      g = u;  // planted: no sigmoid
      gate[t] = __float2half_rn(g);
    }
  }
  __syncthreads();
  const std::size_t row = static_cast<std::size_t>(t) * D;
  for (int d = tid; d < D; d += static_cast<int>(blockDim.x)) {
    const float f = __half2float(moe_out[row + d]) + g * __half2float(shexp_out[row + d]);
    ffn_out[row + d] = __float2half_rn(f);
    if (resid != nullptr) resid[row + d] = __float2half_rn(__half2float(resid[row + d]) + f);
  }
}

template <class W>
static void launch_shexp(const void* Wg, const void* x, const void* moe_out, const void* shexp_out,
                         void* gate, void* ffn_out, void* resid, int T, int D) {
  simt::launch(moe_shexp_gate_add_kernel<W>, dim3(T), dim3(256),
               static_cast<std::size_t>(D + 1) * sizeof(float), nullptr, static_cast<const W*>(Wg),
               static_cast<const __half*>(x), static_cast<const __half*>(moe_out),
               static_cast<const __half*>(shexp_out), static_cast<__half*>(gate),
               static_cast<__half*>(ffn_out), static_cast<__half*>(resid), D);
}

void moe_shexp_gate_add(const void* W_gate, dsk::WType wt, const void* x, const void* moe_out,
                        const void* shexp_out, void* gate, void* ffn_out, void* resid, int T, int D) {
  switch (wt) {
    case dsk::WType::f32:
      launch_shexp<float>(W_gate, x, moe_out, shexp_out, gate, ffn_out, resid, T, D);
      break;
    case dsk::WType::f16:
      launch_shexp<__half>(W_gate, x, moe_out, shexp_out, gate, ffn_out, resid, T, D);
      break;
    case dsk::WType::bf16:
      launch_shexp<__nv_bfloat16>(W_gate, x, moe_out, shexp_out, gate, ffn_out, resid, T, D);
      break;
  }
}

void plant(dsk::KernelTable& t) { t.moe_shexp_gate_add = moe_shexp_gate_add; }

}  // namespace mutant_moe_shexp_gate_no_sigmoid
}  // namespace DSK_NS
