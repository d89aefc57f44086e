// mutant:norm-no-offset: RMSNorm scales by w where Qwen3-Next needs (1 + w): a plain RMSNorm kernel reused on
// weights stored around 0. The production rmsnorm (kernels/rmsnorm.cu) called with w_offset 0.
// docs/mutants.md says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_norm_no_offset {

void rmsnorm(const void* x, const float* w, float /*w_offset*/, void* y, int rows, int width, float eps) {
  table().rmsnorm(x, w, 0.0f, y, rows, width, eps);  // planted: the (1 + w) offset dropped
}

void plant(dsk::KernelTable& t) { t.rmsnorm = rmsnorm; }

}  // namespace mutant_norm_no_offset
}  // namespace DSK_NS
