// Gated RMSNorm of a Gated DeltaNet layer's output (Qwen3NextRMSNormGated, reference-math.md
// §3.7), per (token, value head) of width hd:
//   y[t, h, :] = half(w * (o[t, h, :] * rsqrt(mean(o[t, h, :]^2) + eps)) * silu(z[t, h, :]))
// w [hd] is shared by every head and applied as stored: this norm has no (1 + w) form, even
// in Qwen3-Next. o is the recurrence output, z the z_gate projection, both f16 [T, n_heads * hd].
// One warp per (token, head), four per block, as qk_norm.cu.
#include "common.cuh"

namespace DSK_NS {

constexpr int kGatedNormHeadsPerBlock = 4;

__global__ void gated_rmsnorm_kernel(const __half* __restrict__ o, const __half* __restrict__ z,
                                     const float* __restrict__ w, __half* __restrict__ y, int items, int hd,
                                     float eps) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int item = static_cast<int>(blockIdx.x) * kGatedNormHeadsPerBlock + warp;  // t * n_heads + h
  if (item >= items) return;
  const std::size_t base = static_cast<std::size_t>(item) * hd;
  float ss = 0.0f;
  for (int i = lane; i < hd; i += 32) {
    const float v = __half2float(o[base + i]);
    ss += v * v;
  }
  const float inv = 1.0f / sqrtf(warp_sum(ss) / static_cast<float>(hd) + eps);
  for (int i = lane; i < hd; i += 32) {
    const float zi = __half2float(z[base + i]);
    y[base + i] = __float2half_rn(w[i] * (__half2float(o[base + i]) * inv) * (zi / (1.0f + expf(-zi))));
  }
}

void gated_rmsnorm(const void* o, const void* z, const float* w, void* y, int T, int n_heads, int head_dim,
                   float eps) {
  const int items = T * n_heads;
  const dim3 grid((items + kGatedNormHeadsPerBlock - 1) / kGatedNormHeadsPerBlock),
      block(32 * kGatedNormHeadsPerBlock);
  simt::launch(gated_rmsnorm_kernel, grid, block, 0, nullptr, static_cast<const __half*>(o),
               static_cast<const __half*>(z), w, static_cast<__half*>(y), items, head_dim, eps);
}

}  // namespace DSK_NS
