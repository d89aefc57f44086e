// mutant:rope-theta-default: RoPE rotates with the library default base 10000 instead of the model's
// rope_theta. The production rope (kernels/rope.cu) called with theta 10000. docs/mutants.md says where the
// harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_rope_theta_default {

void rope(void* q, void* k, int T, int n_q, int n_kv, int head_dim, int rotary_dim, int pos0, float /*theta*/,
          const float* freq_factors, bool neox) {
  // planted: the default base, not the config's
  table().rope(q, k, T, n_q, n_kv, head_dim, rotary_dim, pos0, 10000.0f, freq_factors, neox);
}

void plant(dsk::KernelTable& t) { t.rope = rope; }

}  // namespace mutant_rope_theta_default
}  // namespace DSK_NS
