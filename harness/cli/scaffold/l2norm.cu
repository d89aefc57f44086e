// The l2 normalisation of a Gated DeltaNet layer's queries and keys (the q_l2 and k_l2 stages of
// Qwen3.5 / Qwen3-Next), f32: the conv output's first key_dim channels are q and the next key_dim
// are k, k_heads heads of k_dim each; per token and head,
//   q_out = q / sqrt(sum(q^2) + eps) * q_scale,   k_out = k / sqrt(sum(k^2) + eps),
// q_scale = k_dim^-0.5 and eps = 1e-6 as HF and FLA compute it (the rsqrt(sum + eps) form).
//
// One warp per (token, head, q or k): its 32 lanes each square a strided slice and fold the sums
// with xor shuffles (every lane ends with the whole sum), then scale their slices. The same file
// runs on the CPU (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

__global__ void l2norm_kernel(float* q_out, float* k_out, const float* conv, int k_heads, int k_dim,
                              int conv_dim, float q_scale, float eps) {
  const int t = blockIdx.y, h = blockIdx.x, is_k = blockIdx.z;
  const float* x = conv + static_cast<long>(t) * conv_dim + (is_k * k_heads + h) * k_dim;
  float* y = (is_k != 0 ? k_out : q_out) + (static_cast<long>(t) * k_heads + h) * k_dim;
  float sum_sq = 0.0f;
  for (int d = threadIdx.x; d < k_dim; d += 32) sum_sq += x[d] * x[d];
  for (int offset = 16; offset > 0; offset /= 2) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  const float scale = rsqrtf(sum_sq + eps) * (is_k != 0 ? 1.0f : q_scale);
  for (int d = threadIdx.x; d < k_dim; d += 32) y[d] = x[d] * scale;
}

// Host entry point: host pointers in and out (what the candidate hands over).
void l2norm_forward(float* q_out, float* k_out, const float* conv, int tokens, int k_heads, int k_dim,
                    int conv_dim, float q_scale, float eps) {
  const std::size_t nc = static_cast<std::size_t>(tokens) * conv_dim;
  const std::size_t nq = static_cast<std::size_t>(tokens) * k_heads * k_dim;
  simt::DeviceBuffer<float> d_conv(nc), d_q(nq), d_k(nq);
  d_conv.upload(conv, nc);
  simt::launch(l2norm_kernel, dim3(k_heads, tokens, 2), dim3(32), 0, nullptr, d_q.data(), d_k.data(),
               d_conv.data(), k_heads, k_dim, conv_dim, q_scale, eps);
  simt::synchronize();
  d_q.download(q_out, nq);
  d_k.download(k_out, nq);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string l2norm_unavailable() { return simt::device_error(); }
