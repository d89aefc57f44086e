// Causal GQA attention over a KV cache, for prefill (T query rows) and decode (T = 1).
// For query token t (position p = pos0 + t) and head h reading KV head kh = h / (n_q / n_kv):
//   s_j = (q[t, h] . k[j, kh]) / sqrt(hd)       j = 0..p
//   out[t, h] = sum_j softmax(s)_j v[j, kh]
// One block per (token, head). q is staged in shared memory; warps take keys round-robin,
// 32 keys at a time: lanes split head_dim, the 32 partials of each key meet in shared memory
// and lane m sums key m's in warp_sum's order (butterfly_sum32), so a warp pays two __syncwarp
// per 32 keys instead of five shuffles per key. The scores go to shared memory; the block
// reduces the max and the sum (its partials in dynamic shared memory too, where the SIMT hazard
// checker sees them); then each thread owns output dimensions and walks the keys in order.
// q and the caches are read with row strides q_ld and kv_ld (elements), so GPT-2's MHA
// reads q, k and v straight out of the fused c_attn rows [q | k | v] (stride 3 D) without a
// split copy; the decoder passes the packed widths n_q * hd and n_kv * hd.
#include "common.cuh"

namespace DSK_NS {

constexpr int kAttnThreads = 128;

__global__ void attention_kernel(const __half* __restrict__ q, const __half* __restrict__ kc,
                                 const __half* __restrict__ vc, __half* __restrict__ out, int pos0, int n_q,
                                 int n_kv, int hd, int q_ld, int kv_ld, float scale) {
  SIMT_DYNAMIC_SHARED(float, smem);
  const int t = static_cast<int>(blockIdx.x), h = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int n_warps = static_cast<int>(blockDim.x) / 32;
  float* scratch = smem;                               // [32]: block_reduce's partials
  float* qs = smem + 32;                               // [hd]
  float* part = smem + 32 + hd + warp * 32 * 32;       // this warp's [32 keys][32 lanes]
  float* scores = smem + 32 + hd + n_warps * 32 * 32;  // [p + 1]
  const int kh = h / (n_q / n_kv);
  const int last = pos0 + t;
  const std::size_t kv_w = static_cast<std::size_t>(kv_ld);

  const __half* qh = q + static_cast<std::size_t>(t) * q_ld + static_cast<std::size_t>(h) * hd;
  for (int i = tid; i < hd; i += static_cast<int>(blockDim.x)) qs[i] = __half2float(qh[i]);
  __syncthreads();

  // Keys j0, j0 + n_warps, ... (32 of them) per pass of this warp.
  for (int j0 = warp; j0 <= last; j0 += 32 * n_warps) {
    int m = 0;
    for (int j = j0; m < 32 && j <= last; ++m, j += n_warps) {
      const __half* kj = kc + static_cast<std::size_t>(j) * kv_w + static_cast<std::size_t>(kh) * hd;
      float s = 0.0f;
      for (int i = lane; i < hd; i += 32) s += qs[i] * __half2float(kj[i]);
      part[m * 32 + lane] = s;
    }
    __syncwarp();
    if (lane < m) scores[j0 + lane * n_warps] = butterfly_sum32(part + lane * 32) * scale;
    __syncwarp();  // read before the next pass overwrites
  }
  __syncthreads();

  float mx = -INFINITY;
  for (int j = tid; j <= last; j += static_cast<int>(blockDim.x)) mx = fmaxf(mx, scores[j]);
  mx = block_reduce<true>(mx, scratch);
  float sum = 0.0f;
  for (int j = tid; j <= last; j += static_cast<int>(blockDim.x)) {
    const float e = expf(scores[j] - mx);
    scores[j] = e;
    sum += e;
  }
  sum = block_reduce<false>(sum, scratch);  // its barriers also publish the exp'd scores
  const float inv = 1.0f / sum;

  __half* oh = out + (static_cast<std::size_t>(t) * n_q + h) * hd;
  for (int i = tid; i < hd; i += static_cast<int>(blockDim.x)) {
    const __half* vi = vc + static_cast<std::size_t>(kh) * hd + i;
    float acc = 0.0f;
    for (int j = 0; j <= last; ++j) acc += scores[j] * __half2float(vi[static_cast<std::size_t>(j) * kv_w]);
    oh[i] = __float2half_rn(acc * inv);
  }
}

void attention(const void* q, const void* k_cache, const void* v_cache, void* out, int T, int P, int pos0,
               int n_q, int n_kv, int head_dim, int q_ld, int kv_ld) {
  const std::size_t smem =
      static_cast<std::size_t>(32 + head_dim + kAttnThreads / 32 * 32 * 32 + P) * sizeof(float);
  simt::launch(attention_kernel, dim3(T, n_q), dim3(kAttnThreads), smem, nullptr,
               static_cast<const __half*>(q), static_cast<const __half*>(k_cache),
               static_cast<const __half*>(v_cache), static_cast<__half*>(out), pos0, n_q, n_kv, head_dim,
               q_ld, kv_ld, 1.0f / sqrtf(static_cast<float>(head_dim)));
}

}  // namespace DSK_NS
