// The per-head gates of a Gated DeltaNet layer (reference-math.md §3.3), each a GEMV row with
// an activation epilogue, so the pre-activations never round to f16:
//   beta[t, h] = half(sigmoid(W_beta[h, :] . x[t, :]))
//   g[t, h]    = half(a_neg[h] * softplus(W_alpha[h, :] . x[t, :] + dt_bias[h]))
// a_neg = -exp(A_log), as GGUF stores it (ssm_a); dt_bias is ssm_dt.bias; g <= 0 is the
// recurrence's log-decay. softplus(u) = log1p(exp(u)), and u itself above 20, as torch.
// Work split as gemv.cu: x[t, :] staged in shared memory as f32, one warp per output, the
// 2 * nv outputs of a token (beta heads, then g heads) over kGemvRows warps (one per output)
// per block,
// blockIdx.y = token.
#include "common.cuh"

namespace DSK_NS {

template <class W>
__global__ void gdn_gates_kernel(W Wb, W Wa, const float* __restrict__ a_neg,
                                 const float* __restrict__ dt_bias, const __half* __restrict__ x,
                                 __half* __restrict__ beta, __half* __restrict__ g, int nv, int cols) {
  SIMT_DYNAMIC_SHARED(float, xs);
  const int t = static_cast<int>(blockIdx.y);
  stage_rows_f32(x, t, 1, cols, xs);

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int out = static_cast<int>(blockIdx.x) * kGemvRows + warp;
  if (out >= 2 * nv) return;
  const bool is_beta = out < nv;
  const int h = is_beta ? out : out - nv;
  const float u = warp_dot(weight_row(is_beta ? Wb : Wa, static_cast<std::size_t>(h), cols), xs, cols, lane);
  if (lane != 0) return;
  const std::size_t o = static_cast<std::size_t>(t) * nv + h;
  if (is_beta) {
    beta[o] = __float2half_rn(1.0f / (1.0f + expf(-u)));
  } else {
    const float a = u + dt_bias[h];
    g[o] = __float2half_rn(a_neg[h] * (a > 20.0f ? a : log1pf(expf(a))));
  }
}

template <class W>
static void launch_gdn_gates(W Wb, W Wa, const float* a_neg, const float* dt_bias, const void* x, void* beta,
                             void* g, int T, int nv, int cols) {
  const dim3 grid((2 * nv + kGemvRows - 1) / kGemvRows, T), block(32 * kGemvRows);
  simt::launch(gdn_gates_kernel<W>, grid, block, static_cast<std::size_t>(cols) * sizeof(float), nullptr, Wb,
               Wa, a_neg, dt_bias, static_cast<const __half*>(x), static_cast<__half*>(beta),
               static_cast<__half*>(g), nv, cols);
}

void gdn_gates(const void* W_beta, const void* W_alpha, dsk::WType wt, const float* a_neg,
               const float* dt_bias, const void* x, void* beta, void* g, int T, int nv, int cols) {
  with_weight(W_beta, wt, cols, [&](auto wb) {
    launch_gdn_gates(wb, same_kind(wb, W_alpha), a_neg, dt_bias, x, beta, g, T, nv, cols);
  });
}

}  // namespace DSK_NS
