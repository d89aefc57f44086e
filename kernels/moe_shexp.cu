// Qwen3-Next's shared-expert gate and the FFN's sum (docs/moe.md), one block per token t:
//   u             = W_gate[0, :] . x[t, :]                            f32 (x is ffn_norm)
//   g             = sigmoid(u)                                        f32
//   gate[t]       = half(g)
//   ffn_out[t, :] = half(moe_out[t, :] + g * shexp_out[t, :])         f32, then stored
//   resid[t, :]   = half(resid[t, :] + that f32 sum)                  with resid (chain-add)
// The shared expert itself is a SwiGLU MLP every token runs: the grouped experts of
// moe_experts.cu serve it as one expert of top-1 at weight 1, so its activation stays f32 too.
// Here the gate's one-row projection is gemv.cu's warp dot over the token's row staged in shared
// memory as f32 (warp 0), and the gate never rounds to half before it scales the shared expert:
// the half value is only what the shexp_gate stage stores.
// Launch: grid T, block 256; shared memory D + 1 floats.
#include "common.cuh"

namespace DSK_NS {

constexpr int kShexpThreads = 256;

template <class W>
__global__ void moe_shexp_gate_add_kernel(W Wg, const __half* __restrict__ x,
                                          const __half* __restrict__ moe_out,
                                          const __half* __restrict__ shexp_out, __half* __restrict__ gate,
                                          __half* __restrict__ ffn_out, __half* __restrict__ resid, int D) {
  SIMT_DYNAMIC_SHARED(float, xs);  // [D] the token's ffn_norm row, then [1] the gate
  float& g = xs[D];
  const int t = static_cast<int>(blockIdx.x);
  stage_rows_f32(x, t, 1, D, xs);
  const int tid = static_cast<int>(threadIdx.x);
  if (tid < 32) {
    const float u = warp_dot(Wg, xs, D, tid);
    if (tid == 0) {
      g = 1.0f / (1.0f + expf(-u));
      gate[t] = __float2half_rn(g);
    }
  }
  __syncthreads();  // the gate published to every thread
  const std::size_t row = static_cast<std::size_t>(t) * D;
  for (int d = tid; d < D; d += static_cast<int>(blockDim.x)) {
    const float f = __half2float(moe_out[row + d]) + g * __half2float(shexp_out[row + d]);
    ffn_out[row + d] = __float2half_rn(f);
    if (resid != nullptr) resid[row + d] = __float2half_rn(__half2float(resid[row + d]) + f);
  }
}

template <class W>
static void launch_shexp(W Wg, const void* x, const void* moe_out, const void* shexp_out, void* gate,
                         void* ffn_out, void* resid, int T, int D) {
  simt::launch(moe_shexp_gate_add_kernel<W>, dim3(T), dim3(kShexpThreads),
               static_cast<std::size_t>(D + 1) * sizeof(float), nullptr, Wg, static_cast<const __half*>(x),
               static_cast<const __half*>(moe_out), static_cast<const __half*>(shexp_out),
               static_cast<__half*>(gate), static_cast<__half*>(ffn_out), static_cast<__half*>(resid), D);
}

void moe_shexp_gate_add(const void* W_gate, dsk::WType wt, const void* x, const void* moe_out,
                        const void* shexp_out, void* gate, void* ffn_out, void* resid, int T, int D) {
  with_weight(W_gate, wt, D,
              [&](auto w) { launch_shexp(w, x, moe_out, shexp_out, gate, ffn_out, resid, T, D); });
}

}  // namespace DSK_NS
