// Embedding lookup, with GPT-2's learned absolute positions folded in:
//   out[t, :] = half(table[tokens[t], :] + pos[pos0 + t, :])     (pos may be null: no positions)
// The sum is formed in f32 and rounded once, as wte[ids] + wpe[pos] would be before the first
// LayerNorm. One block per token, threads striding over the row. Token ids and positions are
// checked on the host before the launch.
#include "common.cuh"

namespace DSK_NS {

template <class W>
__global__ void embedding_kernel(W table, const std::int32_t* __restrict__ tokens,
                                 const float* __restrict__ pos, int pos0, __half* __restrict__ out, int D) {
  const int t = static_cast<int>(blockIdx.x);
  const W row = weight_row(table, static_cast<std::size_t>(tokens[t]), D);
  const int p = pos0 + t;
  const float* prow = pos != nullptr ? pos + static_cast<std::size_t>(p) * D : nullptr;
  for (int c = static_cast<int>(threadIdx.x); c < D; c += static_cast<int>(blockDim.x)) {
    const float v = to_f_at(row, c) + (prow != nullptr ? prow[c] : 0.0f);
    out[static_cast<std::size_t>(t) * D + c] = __float2half_rn(v);
  }
}

template <class W>
static void launch_embedding(W table, const std::int32_t* tokens, const float* pos, int pos0, void* out,
                             int T, int D) {
  simt::launch(embedding_kernel<W>, dim3(T), dim3(128), 0, nullptr, table, tokens, pos, pos0,
               static_cast<__half*>(out), D);
}

void embedding(const void* table, dsk::WType wt, const std::int32_t* tokens, const float* pos, int pos0,
               void* out, int T, int D) {
  with_weight(table, wt, D, [&](auto w) { launch_embedding(w, tokens, pos, pos0, out, T, D); });
}

}  // namespace DSK_NS
