// mutant:softmax-no-max: attention's softmax takes exp(s) without subtracting the row's max: equal to the
// stable form until a score passes 88.7, then inf / inf. The kernel of kernels/attention.cu with that one
// change, marked "planted"; the rest is the production code as it was when the mutant was written.
// docs/mutants.md says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_softmax_no_max {

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
    const float e = expf(scores[j]);  // planted: the max not subtracted
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

void plant(dsk::KernelTable& t) { t.attention = attention; }

}  // namespace mutant_softmax_no_max
}  // namespace DSK_NS
