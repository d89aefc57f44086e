// Rotary position embedding (RoPE), f32, in place on q [T, n_heads * head_dim].
//
// Token t sits at position pos0 + t. The first `rotary` dims of each head rotate in pairs by
// the angle pos * inv_freq[i] (i < rotary / 2): neox pairs dims (i, i + rotary / 2), normal
// pairs (2i, 2i + 1); the other dims pass through. One thread per (token, head, pair). The same
// file runs on the CPU (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kThreads = 128;

__global__ void rope_kernel(float* q, const float* inv_freq, int tokens, int heads, int head_dim, int rotary,
                            int pos0, bool neox) {
  const int half = rotary / 2;
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<long>(tokens) * heads * half) return;
  const int i = static_cast<int>(idx % half);
  const long head = idx / half;  // token * heads + h
  const int t = static_cast<int>(head / heads);
  float* v = q + head * head_dim;
  const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
  const float angle = static_cast<float>(pos0 + t) * inv_freq[i];
  const float c = cosf(angle), s = sinf(angle);
  const float x0 = v[a], x1 = v[b];
  v[a] = x0 * c - x1 * s;
  v[b] = x0 * s + x1 * c;
}

// Host entry point: rotates q (host memory) in place.
void rope_forward(float* q, const float* inv_freq, int tokens, int heads, int head_dim, int rotary, int pos0,
                  bool neox) {
  const long n = static_cast<long>(tokens) * heads * head_dim;
  simt::DeviceBuffer<float> d_q(n), d_f(rotary / 2);
  d_q.upload(q, n);
  d_f.upload(inv_freq, rotary / 2);
  const long threads = static_cast<long>(tokens) * heads * (rotary / 2);
  const int blocks = static_cast<int>((threads + kThreads - 1) / kThreads);
  simt::launch(rope_kernel, dim3(blocks), dim3(kThreads), 0, nullptr, d_q.data(), d_f.data(), tokens, heads,
               head_dim, rotary, pos0, neox);
  simt::synchronize();
  d_q.download(q, n);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string rope_unavailable() { return simt::device_error(); }
