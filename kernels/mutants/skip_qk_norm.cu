// mutant:skip-qk-norm: declares QkNorm, copies q and k through unnormalised. In place of the production
// qk_norm (kernels/qk_norm.cu): q to qn and k to kn, unchanged. docs/mutants.md says where the harness must
// first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_skip_qk_norm {

void qk_norm(const void* q, const void* k, const float* /*wq*/, const float* /*wk*/, float /*w_offset*/,
             void* qn, void* kn, int T, int n_q, int n_kv, int head_dim, float /*eps*/) {
  // planted: declared, never applied
  const std::size_t row = static_cast<std::size_t>(T) * head_dim * sizeof(__half);
  simt::memcpy(qn, q, row * static_cast<std::size_t>(n_q), simt::CopyKind::device_to_device);
  simt::memcpy(kn, k, row * static_cast<std::size_t>(n_kv), simt::CopyKind::device_to_device);
}

void plant(dsk::KernelTable& t) { t.qk_norm = qk_norm; }

}  // namespace mutant_skip_qk_norm
}  // namespace DSK_NS
