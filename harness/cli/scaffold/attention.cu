// Causal attention core, f32: for query token t and head h,
//   out[t, h, :] = sum_j p_j v[j, g, :],  p = softmax_j(q[t, h, :] . k[j, g, :] * scale),
// over the keys j = 0 .. kv_len - tokens + t: the cache holds every position so far, this call's
// `tokens` rows last, so query t sits at position kv_len - tokens + t and sees itself and what
// came before (the prefill: kv_len == tokens; a decode step: tokens == 1). Grouped-query
// attention: query head h reads kv head g = h / (n_heads / n_kv_heads).
//
// One block per (token, head). Its threads take keys round-robin and write the scaled scores to
// shared memory; the block finds their max (a tree in shared memory), turns each score into
// exp(score - max) (subtracting the max keeps exp in range) and sums them; then each thread owns
// some output dims and walks every key's v. The same file runs on the CPU (Driftscope's SIMT
// runtime) and, built by nvcc, on a GPU.
#include <cfloat>

#include "simt/simt.h"

constexpr int kThreads = 128;  // a power of two: the tree reductions halve it

// The max (is_max) or the sum of every thread's `v` over the block, returned to all of them.
__device__ float block_reduce(float* partial, float v, bool is_max) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) {
      const float other = partial[threadIdx.x + stride];
      partial[threadIdx.x] = is_max ? fmaxf(partial[threadIdx.x], other) : partial[threadIdx.x] + other;
    }
    __syncthreads();
  }
  const float r = partial[0];
  __syncthreads();  // every thread has read it before the next call overwrites it
  return r;
}

__global__ void attention_kernel(const float* q, const float* k, const float* v, float* out, int tokens,
                                 int kv_len, int n_heads, int n_kv_heads, int head_dim, float scale) {
  SIMT_DYNAMIC_SHARED(float, smem);
  float* partial = smem;            // [kThreads]
  float* scores = smem + kThreads;  // [kv_len]
  const int t = blockIdx.x, h = blockIdx.y;
  const int g = h / (n_heads / n_kv_heads);
  const int n_keys = kv_len - tokens + t + 1;
  const int q_width = n_heads * head_dim, kv_width = n_kv_heads * head_dim;
  const float* q_th = q + static_cast<long>(t) * q_width + h * head_dim;

  float local_max = -FLT_MAX;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
    const float* k_j = k + static_cast<long>(j) * kv_width + g * head_dim;
    float dot = 0.0f;
    for (int d = 0; d < head_dim; ++d) dot += q_th[d] * k_j[d];
    scores[j] = dot * scale;
    local_max = fmaxf(local_max, scores[j]);
  }
  const float row_max = block_reduce(partial, local_max, true);
  float local_sum = 0.0f;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
    scores[j] = expf(scores[j] - row_max);
    local_sum += scores[j];
  }
  const float inv_sum = 1.0f / block_reduce(partial, local_sum, false);  // its barriers publish scores[]

  float* out_th = out + static_cast<long>(t) * q_width + h * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n_keys; ++j) acc += scores[j] * v[static_cast<long>(j) * kv_width + g * head_dim + d];
    out_th[d] = acc * inv_sum;
  }
}

// Host entry point: host pointers in and out (what the candidate hands over).
void attention_forward(float* out, const float* q, const float* k, const float* v, int tokens, int kv_len,
                       int n_heads, int n_kv_heads, int head_dim, float scale) {
  const std::size_t nq = static_cast<std::size_t>(tokens) * n_heads * head_dim,
                    nkv = static_cast<std::size_t>(kv_len) * n_kv_heads * head_dim;
  simt::DeviceBuffer<float> d_q(nq), d_k(nkv), d_v(nkv), d_out(nq);
  d_q.upload(q, nq);
  d_k.upload(k, nkv);
  d_v.upload(v, nkv);
  const std::size_t smem = (kThreads + static_cast<std::size_t>(kv_len)) * sizeof(float);
  simt::launch(attention_kernel, dim3(tokens, n_heads), dim3(kThreads), smem, nullptr, d_q.data(), d_k.data(),
               d_v.data(), d_out.data(), tokens, kv_len, n_heads, n_kv_heads, head_dim, scale);
  simt::synchronize();
  d_out.download(out, nq);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string attention_unavailable() { return simt::device_error(); }
