// mutant:moe-capacity-drop: the grouping of kernels/moe_experts.cu with a per-expert capacity, as
// Switch / GShard-style MoE layers have: each expert takes at most ceil(T k / E) slots (capacity
// factor 1) and the slots past it are dropped, adding nothing to their token's output. A dropless
// model (every Qwen3-MoE and Mixtral checkpoint) loses the routed contribution of those tokens. The
// grouping kernel with that one change, marked "planted"; the other launches are the production
// ones (moe_experts.cuh). docs/mutants.md says where the harness must first catch it.
#include "../moe_experts.cuh"

namespace DSK_NS {
namespace mutant_moe_capacity_drop {

__global__ void moe_group_kernel(const std::int32_t* __restrict__ ids, int n, int E, MoeScratch s) {
  __shared__ int count[dsk::kMoeMaxExperts];
  const int tid = static_cast<int>(threadIdx.x), bd = static_cast<int>(blockDim.x);
  const int capacity = (n + E - 1) / E;  // planted: a capacity limit the model does not have
  for (int e = tid; e < E; e += bd) {
    int c = 0;
    for (int i = 0; i < n; ++i) c += ids[i] == e ? 1 : 0;
    count[e] = c < capacity ? c : capacity;  // planted: the slots past it dropped
  }
  for (int i = tid; i < n; i += bd) s.kept[i] = 0;
  __syncthreads();
  if (tid == 0) {
    int at = 0, na = 0;
    for (int e = 0; e < E; ++e) {
      s.offsets[e] = at;
      at += count[e];
      if (count[e] > 0) s.active[na++] = e;
    }
    s.offsets[E] = at;
    *s.n_active = na;
  }
  __syncthreads();
  for (int e = tid; e < E; e += bd) {
    int at = s.offsets[e];
    for (int i = 0; i < n && at < s.offsets[e + 1]; ++i)
      if (ids[i] == e) {
        s.slots[at++] = i;
        s.kept[i] = 1;
      }
  }
}

void moe_experts(const void* W_gate, const void* W_up, const void* W_down, dsk::WType wt, const void* x,
                 const std::int32_t* ids, const void* weights, void* out, void* resid, void* scratch, int T,
                 int k, int E, int F, int D) {
  const int n = T * k;
  const MoeScratch s = moe_scratch(scratch, T, k, E, F);
  simt::launch(moe_group_kernel, dim3(1), dim3(256), 0, nullptr, ids, n, E, s);
  moe_gate_up(W_gate, W_up, wt, x, k, s, n, E, F, D);
  moe_down(W_down, wt, s, n, E, F, D);
  moe_combine(weights, out, resid, s, T, k, D);
}

void plant(dsk::KernelTable& t) { t.moe_experts = moe_experts; }

}  // namespace mutant_moe_capacity_drop
}  // namespace DSK_NS
