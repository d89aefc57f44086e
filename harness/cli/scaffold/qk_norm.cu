// QK-norm, f32: an RMSNorm of every head of q (or k) on its own,
//   out[t, h, :] = x[t, h, :] / sqrt(mean(x[t, h, :]^2) + eps) * w,
// x [tokens, heads * head_dim], w [head_dim] shared by every head (Qwen3's q_norm and k_norm).
//
// One warp per (token, head): a head is short (64 or 128 dims), so its 32 lanes each square a
// strided slice and fold their sums with warp shuffles, no shared memory or barrier. The same file
// runs on the CPU (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

__global__ void qk_norm_kernel(const float* x, const float* w, float* out, int head_dim, float eps) {
  const float* head = x + static_cast<long>(blockIdx.x) * head_dim;  // blockIdx.x: token * heads + h
  float* head_out = out + static_cast<long>(blockIdx.x) * head_dim;
  float sum_sq = 0.0f;
  for (int d = threadIdx.x; d < head_dim; d += 32) sum_sq += head[d] * head[d];
  for (int offset = 16; offset > 0; offset /= 2) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  const float inv_rms = rsqrtf(sum_sq / head_dim + eps);  // every lane holds the whole sum (xor)
  for (int d = threadIdx.x; d < head_dim; d += 32) head_out[d] = head[d] * inv_rms * w[d];
}

// Host entry point: host pointers in and out (what the candidate hands over).
void qk_norm_forward(float* out, const float* x, const float* w, int tokens, int heads, int head_dim,
                     float eps) {
  const std::size_t n = static_cast<std::size_t>(tokens) * heads * head_dim;
  simt::DeviceBuffer<float> d_x(n), d_w(head_dim), d_out(n);
  d_x.upload(x, n);
  d_w.upload(w, head_dim);
  simt::launch(qk_norm_kernel, dim3(tokens * heads), dim3(32), 0, nullptr, d_x.data(), d_w.data(),
               d_out.data(), head_dim, eps);
  simt::synchronize();
  d_out.download(out, n);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string qk_norm_unavailable() { return simt::device_error(); }
