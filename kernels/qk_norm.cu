// QK-norm (Qwen3): per-head RMSNorm of q and k in one launch.
//   qn[t, h, :] = half(q[t, h, :] * rsqrt(mean(q[t, h, :]^2) + eps) * (w_offset + wq))   (likewise k)
// w_offset: 0, or 1 for Qwen3-Next's (1 + w) norms (added in f32, see rmsnorm.cu).
// One warp per (token, head), four heads per block; head_dim is small (64-256), so a warp
// strides over it and reduces with shuffles. Heads [0, n_q) of a token are q, the rest k.
#include "common.cuh"

namespace DSK_NS {

constexpr int kQkHeadsPerBlock = 4;

__global__ void qk_norm_kernel(const __half* __restrict__ q, const __half* __restrict__ k,
                               const float* __restrict__ wq, const float* __restrict__ wk, float w_offset,
                               __half* __restrict__ qn, __half* __restrict__ kn, int T, int n_q, int n_kv,
                               int hd, float eps) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int item = static_cast<int>(blockIdx.x) * kQkHeadsPerBlock + warp;
  const int heads = n_q + n_kv;
  if (item >= T * heads) return;
  const int t = item / heads, h = item % heads;
  const bool is_q = h < n_q;
  const std::size_t off = is_q ? (static_cast<std::size_t>(t) * n_q + h) * hd
                               : (static_cast<std::size_t>(t) * n_kv + (h - n_q)) * hd;
  const __half* src = (is_q ? q : k) + off;
  __half* dst = (is_q ? qn : kn) + off;
  const float* w = is_q ? wq : wk;
  float ss = 0.0f;
  for (int i = lane; i < hd; i += 32) {
    const float v = __half2float(src[i]);
    ss += v * v;
  }
  const float inv = 1.0f / sqrtf(warp_sum(ss) / static_cast<float>(hd) + eps);
  for (int i = lane; i < hd; i += 32)
    dst[i] = __float2half_rn(__half2float(src[i]) * inv * (w_offset + w[i]));
}

void qk_norm(const void* q, const void* k, const float* wq, const float* wk, float w_offset, void* qn,
             void* kn, int T, int n_q, int n_kv, int head_dim, float eps) {
  const int items = T * (n_q + n_kv);
  const dim3 grid((items + kQkHeadsPerBlock - 1) / kQkHeadsPerBlock), block(32 * kQkHeadsPerBlock);
  simt::launch(qk_norm_kernel, grid, block, 0, nullptr, static_cast<const __half*>(q),
               static_cast<const __half*>(k), wq, wk, w_offset, static_cast<__half*>(qn),
               static_cast<__half*>(kn), T, n_q, n_kv, head_dim, eps);
}

}  // namespace DSK_NS
