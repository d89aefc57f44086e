// Gated DeltaNet output norm, f32: each value head of the recurrence's output o is RMS-normalised,
// scaled by w and gated by silu(z) (z: the in_proj_z output of the same token and head),
//   out[t, h, :] = o[t, h, :] / sqrt(mean(o[t, h, :]^2) + eps) * w * silu(z[t, h, :]),
// silu(z) = z / (1 + exp(-z)), w [head_dim] shared by every head (Qwen3.5 / Qwen3-Next).
//
// One warp per (token, head): its 32 lanes each square a strided slice of the head and fold the
// sums with xor shuffles (every lane ends with the whole sum), then scale their slices. The same
// file runs on the CPU (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

__global__ void gated_norm_kernel(const float* o, const float* z, const float* w, float* out, int head_dim,
                                  float eps) {
  const long at = static_cast<long>(blockIdx.x) * head_dim;  // blockIdx.x: token * heads + h
  float sum_sq = 0.0f;
  for (int d = threadIdx.x; d < head_dim; d += 32) sum_sq += o[at + d] * o[at + d];
  for (int offset = 16; offset > 0; offset /= 2) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  const float inv_rms = rsqrtf(sum_sq / head_dim + eps);
  for (int d = threadIdx.x; d < head_dim; d += 32) {
    const float g = z[at + d];
    out[at + d] = o[at + d] * inv_rms * w[d] * (g / (1.0f + expf(-g)));
  }
}

// Host entry point: host pointers in and out (what the candidate hands over).
void gated_norm_forward(float* out, const float* o, const float* z, const float* w, int tokens, int heads,
                        int head_dim, float eps) {
  const std::size_t n = static_cast<std::size_t>(tokens) * heads * head_dim;
  simt::DeviceBuffer<float> d_o(n), d_z(n), d_w(head_dim), d_out(n);
  d_o.upload(o, n);
  d_z.upload(z, n);
  d_w.upload(w, head_dim);
  simt::launch(gated_norm_kernel, dim3(tokens * heads), dim3(32), 0, nullptr, d_o.data(), d_z.data(),
               d_w.data(), d_out.data(), head_dim, eps);
  simt::synchronize();
  d_out.download(out, n);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string gated_norm_unavailable() { return simt::device_error(); }
