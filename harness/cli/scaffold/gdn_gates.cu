// The per-head gates of a Gated DeltaNet layer (the beta and g stages of Qwen3.5 / Qwen3-Next),
// f32: per token t and value head h, two dot products of the normed input x[t, :] with a row of
// in_proj_b and of in_proj_a, each with its activation,
//   beta[t, h] = sigmoid(W_b[h, :] . x[t, :])
//   g[t, h]    = a_neg[h] * softplus(W_a[h, :] . x[t, :] + dt_bias[h])
// a_neg = -exp(A_log) (GGUF's ssm_a), dt_bias = ssm_dt.bias; softplus(u) = log1p(exp(u)), and u
// itself above 20, as torch computes it. g <= 0 is the recurrence's log-decay.
//
// One warp per (token, head, beta or g): its 32 lanes each sum a strided slice of the row and fold
// the partial sums with xor shuffles, and lane 0 applies the activation. The same file runs on the
// CPU (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

__global__ void gdn_gates_kernel(float* beta, float* g, const float* x, const float* Wb, const float* Wa,
                                 const float* a_neg, const float* dt_bias, int hidden, int v_heads) {
  const int h = blockIdx.x, t = blockIdx.y, is_g = blockIdx.z;
  const float* w = (is_g != 0 ? Wa : Wb) + static_cast<long>(h) * hidden;
  const float* xt = x + static_cast<long>(t) * hidden;
  float u = 0.0f;
  for (int c = threadIdx.x; c < hidden; c += 32) u += w[c] * xt[c];
  for (int offset = 16; offset > 0; offset /= 2) u += __shfl_xor_sync(0xffffffffu, u, offset);
  if (threadIdx.x != 0) return;
  const long o = static_cast<long>(t) * v_heads + h;
  if (is_g == 0) {
    beta[o] = 1.0f / (1.0f + expf(-u));
  } else {
    const float a = u + dt_bias[h];
    g[o] = a_neg[h] * (a > 20.0f ? a : log1pf(expf(a)));
  }
}

// Host entry point: host pointers in and out (what the candidate hands over).
void gdn_gates_forward(float* beta, float* g, const float* x, const float* Wb, const float* Wa,
                       const float* a_neg, const float* dt_bias, int tokens, int hidden, int v_heads) {
  const std::size_t nx = static_cast<std::size_t>(tokens) * hidden, nw = static_cast<std::size_t>(v_heads) * hidden,
                    no = static_cast<std::size_t>(tokens) * v_heads;
  simt::DeviceBuffer<float> d_x(nx), d_wb(nw), d_wa(nw), d_a(v_heads), d_dt(v_heads), d_beta(no), d_g(no);
  d_x.upload(x, nx);
  d_wb.upload(Wb, nw);
  d_wa.upload(Wa, nw);
  d_a.upload(a_neg, v_heads);
  d_dt.upload(dt_bias, v_heads);
  simt::launch(gdn_gates_kernel, dim3(v_heads, tokens, 2), dim3(32), 0, nullptr, d_beta.data(), d_g.data(),
               d_x.data(), d_wb.data(), d_wa.data(), d_a.data(), d_dt.data(), hidden, v_heads);
  simt::synchronize();
  d_beta.download(beta, no);
  d_g.download(g, no);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string gdn_gates_unavailable() { return simt::device_error(); }
