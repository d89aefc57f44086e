// mutant:rope-no-scaling: RoPE declares the Llama-3 frequency factors and ignores them, which only long
// positions show. The production rope (kernels/rope.cu) called without its freq_factors. docs/mutants.md says
// where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_rope_no_scaling {

void rope(void* q, void* k, int T, int n_q, int n_kv, int head_dim, int rotary_dim, int pos0, float theta,
          const float* /*freq_factors*/, bool neox) {
  // planted: the per-pair scaling factors dropped
  table().rope(q, k, T, n_q, n_kv, head_dim, rotary_dim, pos0, theta, nullptr, neox);
}

void plant(dsk::KernelTable& t) { t.rope = rope; }

}  // namespace mutant_rope_no_scaling
}  // namespace DSK_NS
