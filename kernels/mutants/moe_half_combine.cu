// mutant:moe-half-combine: the weighted combine of kernels/moe_experts.cu accumulated in half
// precision, as a combine written in the activation dtype is: each expert's output is read as
// half, multiplied by its weight in half and added into a half sum, every step rounded. The
// combine kernel with that change, marked "planted"; the other launches are the production ones
// (moe_experts.cuh). docs/mutants.md says where the harness must first catch it.
#include "../moe_experts.cuh"

namespace DSK_NS {
namespace mutant_moe_half_combine {

__global__ void moe_combine_kernel(const __half* __restrict__ weights, MoeScratch s, __half* __restrict__ out,
                                   __half* __restrict__ resid, int T, int k, int D) {
  const int idx = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  if (idx >= T * D) return;
  const int t = idx / D, d = idx % D;
  __half acc = __float2half_rn(0.0f);  // planted: a half accumulator
  for (int j = 0; j < k; ++j) {
    const int slot = t * k + j;
    if (s.kept[slot] == 0) continue;
    // planted: the expert output, its weighting and the sum each rounded to half
    const __half y = __float2half_rn(s.y[static_cast<std::size_t>(slot) * D + d]);
    const __half wy = __float2half_rn(__half2float(weights[slot]) * __half2float(y));
    acc = __float2half_rn(__half2float(acc) + __half2float(wy));
  }
  out[idx] = acc;
  if (resid != nullptr) resid[idx] = __float2half_rn(__half2float(resid[idx]) + __half2float(acc));
}

void moe_experts(const void* W_gate, const void* W_up, const void* W_down, dsk::WType wt, const void* x,
                 const std::int32_t* ids, const void* weights, void* out, void* resid, void* scratch, int T,
                 int k, int E, int F, int D) {
  const int n = T * k;
  const MoeScratch s = moe_scratch(scratch, T, k, E, F);
  moe_group(ids, n, E, s);
  moe_gate_up(W_gate, W_up, wt, x, k, s, n, E, F, D);
  moe_down(W_down, wt, s, n, E, F, D);
  simt::launch(moe_combine_kernel, dim3((T * D + 255) / 256), dim3(256), 0, nullptr,
               static_cast<const __half*>(weights), s, static_cast<__half*>(out), static_cast<__half*>(resid),
               T, k, D);
}

void plant(dsk::KernelTable& t) { t.moe_experts = moe_experts; }

}  // namespace mutant_moe_half_combine
}  // namespace DSK_NS
