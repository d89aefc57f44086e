// mutant:pos-no-offset: the learned position of token t read at t, its index in this launch, instead of pos0
// + t, as if every call were a whole prompt: right for the prefill (pos0 = 0), wpe[0] for every decode token.
// The production embedding (kernels/embedding.cu) called with pos0 0. docs/mutants.md says where the harness
// must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_pos_no_offset {

void embedding(const void* table_w, dsk::WType wt, const std::int32_t* tokens, const float* pos, int /*pos0*/,
               void* out, int T, int D) {
  table().embedding(table_w, wt, tokens, pos, 0, out, T, D);  // planted: positions from 0 every call
}

void plant(dsk::KernelTable& t) { t.embedding = embedding; }

}  // namespace mutant_pos_no_offset
}  // namespace DSK_NS
