// Per-head L2 norm of a Gated DeltaNet layer's q and k (reference-math.md §3.5), read in place
// from the conv output rows [q (n_heads * hd) | k (n_heads * hd) | v], row stride ld:
//   q_l2[t, h, :] = half(q[t, h, :] / sqrt(sum(q[t, h, :]^2) + 1e-6) * q_scale)   q_scale = hd^-0.5
//   k_l2[t, h, :] = half(k[t, h, :] / sqrt(sum(k[t, h, :]^2) + 1e-6))
// The eps sits inside the sqrt (HF, FLA), not llama.cpp's x / max(|x|, eps): the two differ
// only for near-zero vectors. One warp per (token, head, q or k), four per block, as
// qk_norm.cu; items [0, n_heads) of a token are q heads, the rest k heads.
#include "common.cuh"

namespace DSK_NS {

constexpr int kL2HeadsPerBlock = 4;

__global__ void l2norm_kernel(const __half* __restrict__ x, int ld, __half* __restrict__ q,
                              __half* __restrict__ k, int T, int n_heads, int hd, float q_scale) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int item = static_cast<int>(blockIdx.x) * kL2HeadsPerBlock + warp;
  if (item >= T * 2 * n_heads) return;
  const int t = item / (2 * n_heads), h = item % (2 * n_heads);  // h >= n_heads: a k head
  const __half* src = x + static_cast<std::size_t>(t) * ld + static_cast<std::size_t>(h) * hd;
  const bool is_q = h < n_heads;
  __half* dst = (is_q ? q : k) + (static_cast<std::size_t>(t) * n_heads + (is_q ? h : h - n_heads)) * hd;
  const float scale = is_q ? q_scale : 1.0f;
  float ss = 0.0f;
  for (int i = lane; i < hd; i += 32) {
    const float v = __half2float(src[i]);
    ss += v * v;
  }
  const float inv = 1.0f / sqrtf(warp_sum(ss) + 1e-6f);
  for (int i = lane; i < hd; i += 32) dst[i] = __float2half_rn(__half2float(src[i]) * inv * scale);
}

void l2norm(const void* x, int ld, void* q, void* k, int T, int n_heads, int head_dim, float q_scale) {
  const int items = T * 2 * n_heads;
  const dim3 grid((items + kL2HeadsPerBlock - 1) / kL2HeadsPerBlock), block(32 * kL2HeadsPerBlock);
  simt::launch(l2norm_kernel, grid, block, 0, nullptr, static_cast<const __half*>(x), ld,
               static_cast<__half*>(q), static_cast<__half*>(k), T, n_heads, head_dim, q_scale);
}

}  // namespace DSK_NS
