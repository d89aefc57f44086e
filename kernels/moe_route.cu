// Fused mixture-of-experts routing (docs/moe.md), one block per token t:
//   logits[t, e] = W_router[e, :] . x[t, :]                      f32, stored as half
//   rank          = softmax(logits) (softmax_topk) or logits (topk_softmax), in f32
//   ids[t, 0:k]   = the k largest of rank, largest first; equal values go to the lower expert
//                   index (the reference's stable order, reference/ops_moe.cpp top_k)
//   weights[t, j] = softmax_topk: p[ids[j]], divided by sum_j p[ids[j]] when norm_topk
//                   topk_softmax: exp(l[ids[j]] - l[ids[0]]) / sum_i exp(l[ids[i]] - l[ids[0]])
// The projection is gemv.cu's warp-per-row dot over the token's row staged in shared memory as
// f32; the ranking and the top k never see the half-rounded logits, so a router whose logits
// round to one half value still ranks them as their f32 values do. Warp 0 then makes the k
// choices: each lane the best of its strided experts, a butterfly over (value, index) pairs with
// the lower index winning a tie, so every lane ends with the same expert; lane 0 marks it taken.
// Launch: grid T, block 32 * kGemvRows; shared memory (cols + 3 E) floats.
#include "common.cuh"

namespace DSK_NS {

// (v, i) ranks before (bv, bi): a larger value, or an equal value at a lower index.
__device__ inline bool ranks_before(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

template <class W>
__global__ void moe_route_kernel(W Wr, const __half* __restrict__ x, __half* __restrict__ logits,
                                 std::int32_t* __restrict__ ids, __half* __restrict__ weights, int E,
                                 int cols, int k, int rule, int norm_topk) {
  SIMT_DYNAMIC_SHARED(float, smem);
  float* xs = smem;         // [cols] the token's row
  float* lg = xs + cols;    // [E] f32 logits
  float* rank = lg + E;     // [E] what the top k ranks
  float* taken = rank + E;  // [E] 1 once chosen
  __shared__ int chosen[dsk::kMoeMaxTopK];
  const int t = static_cast<int>(blockIdx.x);
  stage_rows_f32(x, t, 1, cols, xs);

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int n_warps = static_cast<int>(blockDim.x) / 32;
  for (int e = warp; e < E; e += n_warps) {
    const float v = warp_dot(weight_row(Wr, static_cast<std::size_t>(e), cols), xs, cols, lane);
    if (lane == 0) {
      lg[e] = v;
      logits[static_cast<std::size_t>(t) * E + e] = __float2half_rn(v);
    }
  }
  __syncthreads();
  if (warp != 0) return;

  // The rank each expert is chosen by, and nothing taken yet.
  float m = -INFINITY;
  for (int e = lane; e < E; e += 32) m = fmaxf(m, lg[e]);
  m = warp_max(m);
  float part = 0.0f;
  for (int e = lane; e < E; e += 32) {
    const float p = rule == static_cast<int>(dsk::MoeRule::softmax_topk) ? expf(lg[e] - m) : lg[e];
    rank[e] = p;
    taken[e] = 0.0f;
    part += p;
  }
  if (rule == static_cast<int>(dsk::MoeRule::softmax_topk)) {
    const float sum = warp_sum(part);
    for (int e = lane; e < E; e += 32) rank[e] /= sum;
  }
  __syncwarp();

  for (int j = 0; j < k; ++j) {
    float bv = -INFINITY;
    int bi = E;  // none yet: any expert ranks before it
    for (int e = lane; e < E; e += 32)
      if (taken[e] == 0.0f && (bi == E || ranks_before(rank[e], e, bv, bi))) {
        bv = rank[e];
        bi = e;
      }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (oi != E && (bi == E || ranks_before(ov, oi, bv, bi))) {
        bv = ov;
        bi = oi;
      }
    }
    if (lane == 0) {
      chosen[j] = bi < E ? bi : -1;  // -1: nothing left to rank (NaN logits), judged as a wrong id
      if (bi < E) taken[bi] = 1.0f;
    }
    __syncwarp();
  }
  if (lane != 0) return;

  // The routing weights of the k chosen, in slot order.
  float w[dsk::kMoeMaxTopK];
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) {
    const int e = chosen[j];
    if (e < 0) {
      w[j] = nanf("");
    } else if (rule == static_cast<int>(dsk::MoeRule::softmax_topk)) {
      w[j] = rank[e];
    } else {
      w[j] = expf(lg[e] - lg[chosen[0]]);  // the first chosen holds the largest logit
    }
    sum += w[j];
  }
  const bool divide = rule == static_cast<int>(dsk::MoeRule::topk_softmax) || norm_topk != 0;
  for (int j = 0; j < k; ++j) {
    const std::size_t o = static_cast<std::size_t>(t) * k + j;
    ids[o] = chosen[j];
    weights[o] = __float2half_rn(divide ? w[j] / sum : w[j]);
  }
}

template <class W>
static void launch_moe_route(W Wr, const void* x, void* logits, std::int32_t* ids, void* weights, int T,
                             int E, int cols, int k, dsk::MoeRule rule, bool norm_topk) {
  const std::size_t smem = (static_cast<std::size_t>(cols) + 3 * static_cast<std::size_t>(E)) * sizeof(float);
  simt::launch(moe_route_kernel<W>, dim3(T), dim3(32 * kGemvRows), smem, nullptr, Wr,
               static_cast<const __half*>(x), static_cast<__half*>(logits), ids,
               static_cast<__half*>(weights), E, cols, k, static_cast<int>(rule), norm_topk ? 1 : 0);
}

void moe_route(const void* W, dsk::WType wt, const void* x, void* logits, std::int32_t* ids, void* weights,
               int T, int E, int cols, int k, dsk::MoeRule rule, bool norm_topk) {
  with_weight(W, wt, cols,
              [&](auto w) { launch_moe_route(w, x, logits, ids, weights, T, E, cols, k, rule, norm_topk); });
}

}  // namespace DSK_NS
