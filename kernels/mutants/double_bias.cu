// mutant:double-bias: SwiGLU adds the gate/up bias the GEMV already added. The production swiglu
// (kernels/swiglu.cu) called as a host that forgot its GEMV adds the bias: has_bias passed true.
// docs/mutants.md says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_double_bias {

void swiglu(const void* gate, const void* up, const float* b_gate, const float* b_up, bool /*has_bias*/,
            void* act, int T, int F, int ld) {
  table().swiglu(gate, up, b_gate, b_up, true, act, T, F, ld);  // planted: the bias a second time
}

void plant(dsk::KernelTable& t) { t.swiglu = swiglu; }

}  // namespace mutant_double_bias
}  // namespace DSK_NS
