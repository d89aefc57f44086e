// Fused QKV projection with optional bias, f32: one launch for the three projections,
//   qkv[t, r] = sum_c W[r, c] * x[t, c] + bias[r],  r < q_dim + 2 kv_dim,
// W stored [q_dim + 2 kv_dim, hidden]: the q rows, then k's, then v's (GPT-2's c_attn is stored so;
// a decoder's three weights stacked). Each output row is q | k | v.
//
// One warp per output column r of one token: its 32 lanes walk row r of W in strides of 32
// (adjacent lanes read adjacent weights: coalesced), then fold their partial sums with warp
// shuffles. A block holds kWarps warps; the grid's y dimension is the token. The same file runs on
// the CPU (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kWarps = 8;

__global__ void qkv_kernel(const float* x, const float* W, const float* bias, float* qkv, int hidden,
                           int width) {
  const int r = blockIdx.x * kWarps + threadIdx.y;
  const int t = blockIdx.y;
  if (r >= width) return;  // a whole warp leaves together: its shuffles stay full
  const float* w_r = W + static_cast<long>(r) * hidden;
  const float* x_t = x + static_cast<long>(t) * hidden;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < hidden; c += 32) sum += w_r[c] * x_t[c];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x == 0) qkv[static_cast<long>(t) * width + r] = sum + (bias ? bias[r] : 0.0f);
}

// Host entry point: host pointers in and out (what the candidate hands over); bias may be null.
void qkv_forward(float* qkv, const float* x, const float* W, const float* bias, int tokens, int hidden,
                 int q_dim, int kv_dim) {
  const int width = q_dim + 2 * kv_dim;
  simt::DeviceBuffer<float> d_x(static_cast<std::size_t>(tokens) * hidden),
      d_W(static_cast<std::size_t>(width) * hidden), d_b(bias ? width : 0),
      d_qkv(static_cast<std::size_t>(tokens) * width);
  d_x.upload(x, d_x.size());
  d_W.upload(W, d_W.size());
  if (bias) d_b.upload(bias, width);
  const dim3 grid((width + kWarps - 1) / kWarps, tokens), block(32, kWarps);
  simt::launch(qkv_kernel, grid, block, 0, nullptr, d_x.data(), d_W.data(), bias ? d_b.data() : nullptr,
               d_qkv.data(), hidden, width);
  simt::synchronize();
  d_qkv.download(qkv, d_qkv.size());
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string qkv_unavailable() { return simt::device_error(); }
