// Embedding lookup: out[t, :] = half(table[tokens[t], :]). One block per token, threads
// striding over the row. Token ids are checked on the host before the launch.
#include "common.cuh"

namespace DSK_NS {

template <class W>
__global__ void embedding_kernel(const W* __restrict__ table, const std::int32_t* __restrict__ tokens,
                                 __half* __restrict__ out, int D) {
  const int t = static_cast<int>(blockIdx.x);
  const W* row = table + static_cast<std::size_t>(tokens[t]) * D;
  for (int c = static_cast<int>(threadIdx.x); c < D; c += static_cast<int>(blockDim.x))
    out[static_cast<std::size_t>(t) * D + c] = __float2half_rn(to_f(row[c]));
}

void embedding(const void* table, dsk::WType wt, const std::int32_t* tokens, void* out, int T, int D) {
  const dim3 grid(T), block(128);
  auto* o = static_cast<__half*>(out);
  switch (wt) {
    case dsk::WType::f32:
      simt::launch(embedding_kernel<float>, grid, block, 0, nullptr, static_cast<const float*>(table), tokens,
                   o, D);
      break;
    case dsk::WType::f16:
      simt::launch(embedding_kernel<__half>, grid, block, 0, nullptr, static_cast<const __half*>(table),
                   tokens, o, D);
      break;
    case dsk::WType::bf16:
      simt::launch(embedding_kernel<__nv_bfloat16>, grid, block, 0, nullptr,
                   static_cast<const __nv_bfloat16*>(table), tokens, o, D);
      break;
  }
}

}  // namespace DSK_NS
