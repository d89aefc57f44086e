// Gated DeltaNet recurrence (the delta rule of a Qwen3.5 / Qwen3-Next linear-attention layer), f32.
// For each value head h, with S its state (k_dim x v_dim, rows the key index), and each token t:
//   S    <- exp(g[t, h]) * S
//   m[j]  = sum_i S[i, j] * k[t, kh, i]                 (what the state recalls for the key)
//   d[j]  = beta[t, h] * (v[t, h, j] - m[j])
//   S    <- S + k[t, kh] d^T
//   out[t, h, j] = sum_i S[i, j] * q[t, kh, i]
// kh is the key head value head h reads: h / (v_heads / k_heads) (HF, FLA), or h % k_heads where
// `tiled` (llama.cpp's GGUF head order). q is already l2-normalised and scaled by k_dim^-0.5, k
// l2-normalised. `state` [v_heads, k_dim, v_dim] comes in holding the sequence's state (zeros at its
// first call) and goes out holding it after the call's tokens.
//
// One block per value head; each thread owns columns j of its head's state, so no two threads
// touch the same element and no barrier is needed. The same file runs on the CPU (Driftscope's SIMT
// runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

__global__ void gdn_kernel(float* out, float* state, const float* q, const float* k, const float* v,
                           const float* g, const float* beta, int tokens, int k_heads, int v_heads, int k_dim,
                           int v_dim, int tiled) {
  const int h = blockIdx.x;
  const int kh = tiled != 0 ? h % k_heads : h / (v_heads / k_heads);
  float* S = state + static_cast<long>(h) * k_dim * v_dim;
  for (int j = threadIdx.x; j < v_dim; j += blockDim.x) {
    for (int t = 0; t < tokens; ++t) {
      const float* kt = k + (static_cast<long>(t) * k_heads + kh) * k_dim;
      const float* qt = q + (static_cast<long>(t) * k_heads + kh) * k_dim;
      const float decay = expf(g[t * v_heads + h]);
      float m = 0.0f;
      for (int i = 0; i < k_dim; ++i) {
        S[i * v_dim + j] *= decay;
        m += S[i * v_dim + j] * kt[i];
      }
      const float d = beta[t * v_heads + h] * (v[(static_cast<long>(t) * v_heads + h) * v_dim + j] - m);
      float o = 0.0f;
      for (int i = 0; i < k_dim; ++i) {
        S[i * v_dim + j] += kt[i] * d;
        o += S[i * v_dim + j] * qt[i];
      }
      out[(static_cast<long>(t) * v_heads + h) * v_dim + j] = o;
    }
  }
}

// Host entry point: host pointers in and out (what the candidate hands over).
void gdn_forward(float* out, float* state, const float* q, const float* k, const float* v, const float* g,
                 const float* beta, int tokens, int k_heads, int v_heads, int k_dim, int v_dim, bool tiled) {
  const std::size_t nq = static_cast<std::size_t>(tokens) * k_heads * k_dim;
  const std::size_t nv = static_cast<std::size_t>(tokens) * v_heads * v_dim;
  const std::size_t ng = static_cast<std::size_t>(tokens) * v_heads;
  const std::size_t ns = static_cast<std::size_t>(v_heads) * k_dim * v_dim;
  simt::DeviceBuffer<float> d_q(nq), d_k(nq), d_v(nv), d_g(ng), d_beta(ng), d_state(ns), d_out(nv);
  d_q.upload(q, nq);
  d_k.upload(k, nq);
  d_v.upload(v, nv);
  d_g.upload(g, ng);
  d_beta.upload(beta, ng);
  d_state.upload(state, ns);
  simt::launch(gdn_kernel, dim3(v_heads), dim3(64), 0, nullptr, d_out.data(), d_state.data(), d_q.data(),
               d_k.data(), d_v.data(), d_g.data(), d_beta.data(), tokens, k_heads, v_heads, k_dim, v_dim,
               tiled ? 1 : 0);
  simt::synchronize();
  d_out.download(out, nv);
  d_state.download(state, ns);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string gdn_unavailable() { return simt::device_error(); }
