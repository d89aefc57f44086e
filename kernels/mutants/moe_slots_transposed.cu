// mutant:moe-slots-transposed: the grouped gate/up GEMV of kernels/moe_experts.cu reads slot s's
// token as s % T, the token of a slot layout [k, T] (slot j of every token, then slot j + 1),
// where the routing kernel writes ids as [T, k] (token s / k). A decode step has one token, where
// both are 0: only a prefill shows it. The grouped kernel with that one change, marked "planted",
// run for gate/up; grouping, down and the combine are the production launches (moe_experts.cuh).
// docs/mutants.md says where the harness must first catch it.
#include "../moe_experts.cuh"

namespace DSK_NS {
namespace mutant_moe_slots_transposed {

template <class W>
__global__ void moe_gate_up_kernel(const W* __restrict__ Wa, const W* __restrict__ Wb,
                                   const __half* __restrict__ src, int T, MoeScratch s, int rows, int cols,
                                   int nt) {
  SIMT_DYNAMIC_SHARED(float, xs);  // [nt][cols]
  const int a = static_cast<int>(blockIdx.y);
  if (a >= *s.n_active) return;  // uniform over the block
  const int e = s.active[a], begin = s.offsets[e], end = s.offsets[e + 1];
  const int tid = static_cast<int>(threadIdx.x), bd = static_cast<int>(blockDim.x);
  const int warp = tid / 32, lane = tid % 32;
  const int row = static_cast<int>(blockIdx.x) * kGemvRows + warp;
  const std::size_t w_off = (static_cast<std::size_t>(e) * rows + (row < rows ? row : 0)) * cols;
  for (int s0 = begin; s0 < end; s0 += nt) {
    const int n = end - s0 < nt ? end - s0 : nt;
    __syncthreads();  // the previous group's rows read by every warp before they are replaced
    for (int i = tid; i < n * cols; i += bd) {
      const int p = i / cols, c = i % cols;
      // planted: the token of a [k, T] slot layout, s % T, for the [T, k] ids' s / k
      xs[i] = __half2float(src[static_cast<std::size_t>(s.slots[s0 + p] % T) * cols + c]);
    }
    __syncthreads();
    float acc_a[kGemvTokens], acc_b[kGemvTokens];
    for (int p = 0; p < kGemvTokens; ++p) acc_a[p] = acc_b[p] = 0.0f;
    if (row < rows) {
      lane_dots(Wa + w_off, xs, n, cols, lane, acc_a);
      lane_dots(Wb + w_off, xs, n, cols, lane, acc_b);
    }
    for (int p = 0; p < n; ++p) {
      const float g = warp_sum(acc_a[p]);
      const float u = warp_sum(acc_b[p]);
      if (lane != 0 || row >= rows) continue;
      s.act[static_cast<std::size_t>(s.slots[s0 + p]) * rows + row] = g / (1.0f + expf(-g)) * u;
    }
  }
}

template <class W>
static void launch_gate_up(const void* Wg, const void* Wu, const void* x, int T, const MoeScratch& s, int n,
                           int E, int F, int D) {
  int nt = static_cast<int>(48 * 1024 / (static_cast<std::size_t>(D) * sizeof(float)));
  nt = nt < 1 ? 1 : nt < kGemvTokens ? nt : kGemvTokens;
  const dim3 grid((F + kGemvRows - 1) / kGemvRows, E < n ? E : n), block(32 * kGemvRows);
  simt::launch(moe_gate_up_kernel<W>, grid, block, static_cast<std::size_t>(nt) * D * sizeof(float), nullptr,
               static_cast<const W*>(Wg), static_cast<const W*>(Wu), static_cast<const __half*>(x), T, s, F,
               D, nt);
}

void moe_experts(const void* W_gate, const void* W_up, const void* W_down, dsk::WType wt, const void* x,
                 const std::int32_t* ids, const void* weights, void* out, void* resid, void* scratch, int T,
                 int k, int E, int F, int D) {
  const int n = T * k;
  const MoeScratch s = moe_scratch(scratch, T, k, E, F);
  moe_group(ids, n, E, s);
  switch (wt) {
    case dsk::WType::f32: launch_gate_up<float>(W_gate, W_up, x, T, s, n, E, F, D); break;
    case dsk::WType::f16: launch_gate_up<__half>(W_gate, W_up, x, T, s, n, E, F, D); break;
    case dsk::WType::bf16: launch_gate_up<__nv_bfloat16>(W_gate, W_up, x, T, s, n, E, F, D); break;
  }
  moe_down(W_down, wt, s, n, E, F, D);
  moe_combine(weights, out, resid, s, T, k, D);
}

void plant(dsk::KernelTable& t) { t.moe_experts = moe_experts; }

}  // namespace mutant_moe_slots_transposed
}  // namespace DSK_NS
