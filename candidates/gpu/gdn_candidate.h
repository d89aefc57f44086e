// simt-gdn (and simt-gdn-plain, mutant:gdn-<name>): the qwen3next hybrid. The Gated DeltaNet
// conv and recurrence run on the kernels of kernels/ssm_conv.cu and kernels/gdn.cu through a
// dsk::KernelTable (SIMT on the CPU); every other op (projections, norms, gates, the gated
// full-attention layers, embedding, head) is f32 on the CPU (candidates/cpu/cpu_ops), since
// kernels/*.cu has no (1 + w) norm, partial-rotary gated attention or GDN projections yet.
// Stage outputs are stored as f16 like every candidate.
//
// GDN layer stage map:
//   attn_norm      rmsnorm (1 + w)                       x -> attn_norm
//   gdn_in_proj    4 projections + sigmoid / softplus     attn_norm -> qkv_mixed, z_gate, beta, g
//   conv           ssm_conv kernels (variant below)       qkv_mixed, prev:conv_state -> conv, conv_state
//   l2norm         per head, q scaled by dk^-0.5          conv -> q_l2, k_l2
//   gdn            gdn kernels (variant below)            q_l2, k_l2, conv (v), g, beta, prev:gdn_state
//                                                         -> gdn_out, gdn_state
//   gated_norm     RMSNorm(o) * silu(z)                   gdn_out, z_gate -> gated_norm
//   out_proj_add   projection + residual                  gated_norm, x -> out_proj, residual_1
//   (then the dense SwiGLU MLP, as the gated-attention layers)
//
// Decode variants (ModelConfig::gdn_fused, from `driftscope run --gdn-variant`): the prefill
// always runs the plain ops (T > 1). A decode step runs op B if GdnInplaceIds is requested, else
// op A for GdnInplace, else plain; op D for SsmConvUpdateIds, else op C for SsmConvUpdate, else
// plain. The fused ops work on the candidate's own state caches (two slots): the harness's
// prev:<state> is placed into a slot first, and the fused op rewrites the cache in place. With
// ids, odd decode steps put the prior state in the OTHER slot (a reorder), so the ids gather
// path runs, not only the identity path.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "candidate.h"
#include "cpu_ops.h"
#include "kernels.h"

namespace ds::gpu {

class GdnCandidate final : public Candidate {
 public:
  // fused_ops: declare (and implement) the fused variants; false = only the plain GDN ops.
  GdnCandidate(const dsk::KernelTable& table, std::string name, std::string description, bool fused_ops,
               int bug = dsk::kBugNone);

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  DType storage_dtype() const override { return DType::f16; }
  OpSet capabilities() const override;
  std::string unavailable() const override;
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

 private:
  const cpu::Mat& w(int layer, std::string_view role) const;
  const cpu::Mat* w_opt(int layer, std::string_view role) const;
  std::vector<float> norm_w(int layer, std::string_view role) const;  // (1 + w) when norm_plus_one
  void conv_step(int layer, int step, const Tensor& x, const Tensor& prev, TensorMap& out) const;
  void gdn_step(int step, const TensorMap& in, TensorMap& out) const;

  const dsk::KernelTable& k_;
  std::string name_, description_;
  bool fused_ops_;
  int bug_;
  ModelConfig cfg_;
  std::map<std::string, cpu::Mat, std::less<>> w_;
};

}  // namespace ds::gpu
