// Rotary position embedding, in place on q and k in one launch.
// For head h of token t at position p = pos0 + t and pair i < R/2 (R = rotary_dim):
//   angle = p * theta^(-2i/R) / f[i];  (a, b) = neox ? (i, i + R/2) : (2i, 2i + 1)
// where f holds the per-pair frequency factors of RoPE scaling (Llama-3 "llama3": low frequencies
// slowed by up to the scaling factor; "linear": every pair by the factor), 1 without scaling.
//   x[a], x[b] = x[a] cos - x[b] sin, x[b] cos + x[a] sin
// Dimensions R.. of each head are left as they are (partial rotary). One block per
// (token, head); heads [0, n_q) are q, the rest k; one thread per pair.
#include "common.cuh"

namespace DSK_NS {

__global__ void rope_kernel(__half* __restrict__ q, __half* __restrict__ k, int n_q, int n_kv, int hd,
                            int rot, int pos0, float theta, const float* __restrict__ freq_factors,
                            int neox) {
  const int t = static_cast<int>(blockIdx.x), h = static_cast<int>(blockIdx.y);
  const int i = static_cast<int>(threadIdx.x);
  const int half = rot / 2;
  if (i >= half) return;
  __half* x = h < n_q ? q + (static_cast<std::size_t>(t) * n_q + h) * hd
                      : k + (static_cast<std::size_t>(t) * n_kv + (h - n_q)) * hd;
  float inv_freq = powf(theta, -2.0f * static_cast<float>(i) / static_cast<float>(rot));
  if (freq_factors != nullptr) inv_freq /= freq_factors[i];
  float s, c;
  sincosf(static_cast<float>(pos0 + t) * inv_freq, &s, &c);
  const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
  const float xa = __half2float(x[a]), xb = __half2float(x[b]);
  x[a] = __float2half_rn(xa * c - xb * s);
  x[b] = __float2half_rn(xb * c + xa * s);
}

void rope(void* q, void* k, int T, int n_q, int n_kv, int head_dim, int rotary_dim, int pos0, float theta,
          const float* freq_factors, bool neox) {
  const dim3 grid(T, n_q + n_kv), block(round_up32(rotary_dim / 2));
  simt::launch(rope_kernel, grid, block, 0, nullptr, static_cast<__half*>(q), static_cast<__half*>(k), n_q,
               n_kv, head_dim, rotary_dim, pos0, theta, freq_factors, neox ? 1 : 0);
}

}  // namespace DSK_NS
