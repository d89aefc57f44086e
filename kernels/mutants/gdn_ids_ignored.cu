// mutant:gdn-ids-ignored: GDN op B and SSM-conv op D read every sequence's prior state from its destination
// slot, ignoring ids: the production in-place ops A and C (kernels/gdn.cu, kernels/ssm_conv.cu) on the
// destination slots cache[rs_head..], which is what the identity path of B and D computes. docs/mutants.md
// says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_gdn_ids_ignored {

void gdn_inplace_ids(const float* q, const float* k, const float* v, const float* g, const float* beta,
                     float* cache, const std::int32_t* /*ids*/, int rs_head, float* /*scratch*/, float* out,
                     int n_seqs, int nk, int nv, int dk, int dv) {
  const std::size_t slot = static_cast<std::size_t>(nv) * dk * dv;
  float* dst = cache + static_cast<std::size_t>(rs_head) * slot;  // planted: read where it is written
  table().gdn_inplace(q, k, v, g, beta, dst, out, n_seqs, nk, nv, dk, dv);
}

void ssm_conv_update_ids(float* cache, const std::int32_t* /*ids*/, int rs_head, float* /*scratch*/,
                         const float* w, const float* x, float* y, int n_seqs, int C, int K, bool silu) {
  const std::size_t slot = static_cast<std::size_t>(C) * (K - 1);
  float* dst = cache + static_cast<std::size_t>(rs_head) * slot;  // planted: read where it is written
  table().ssm_conv_update(dst, w, x, dst, y, n_seqs, C, K, silu);
}

void plant(dsk::KernelTable& t) {
  t.gdn_inplace_ids = gdn_inplace_ids;
  t.ssm_conv_update_ids = ssm_conv_update_ids;
}

}  // namespace mutant_gdn_ids_ignored
}  // namespace DSK_NS
