// The simt, cuda and mutant:<name> candidates: the fused kernels of kernels/*.cu driven
// through a dsk::KernelTable. One host implementation for all of them; only the table
// (SIMT on the CPU, or nvcc on a GPU) and the planted bug differ.
//
// Stage map (decoder layer), one KernelStep per launch or fused group:
//   attn_norm       rmsnorm                       x -> attn_norm
//   fused_qkv       fused_qkv (bias in f32)       attn_norm -> q, k, v
//   qk_norm         qk_norm (qwen3)               q, k -> q_norm, k_norm
//   rope            rope, in place on q and k     q|q_norm, k|k_norm -> q_rope, k_rope
//   attention       attention                     q_rope, cache:k_rope, cache:v -> attn
//   o_proj_add      gemv + chain-add epilogue     attn, x -> attn_out, residual_1
//   ffn_norm        rmsnorm                       residual_1 -> ffn_norm
//   gate_up         gemv over packed [gate | up], bias in the epilogue (f32)
//                                                 ffn_norm -> gate, up
//   swiglu          swiglu (no bias: the GEMV added it)   gate, up -> ffn_act
//   down_add        gemv + chain-add epilogue     ffn_act, residual_1 -> down, residual_2
//
// Stage map (GPT-2 layer):
//   ln_1            layernorm (bias)              x -> ln_1
//   c_attn          gemv over [3 D, D] + bias     ln_1 -> qkv
//   attention_qkv   attention (MHA), q / k / v read in place from [q | k | v] rows
//                                                 qkv, cache:qkv -> attn
//   o_proj_add      gemv + bias + chain-add       attn, x -> attn_out, residual_1
//   ln_2            layernorm (bias)              residual_1 -> ln_2
//   c_fc            gemv + bias                   ln_2 -> fc
//   gelu            gelu (tanh form)              fc -> gelu
//   down_add        gemv + bias + chain-add       gelu, residual_1 -> proj, residual_2
//
// Model level: embedding (+ learned positions pos0.. for GPT-2) tokens -> embed;
// final_norm (rmsnorm) or ln_f (GPT-2 layernorm) x -> final_norm; lm_head gemv -> logits.
#pragma once

#include <map>
#include <string>

#include "candidate.h"
#include "kernels.h"

namespace ds::gpu {

class GpuCandidate final : public Candidate {
 public:
  // `name` is the registry name; `bug` a dsk::Bug (kBugNone for the real candidates).
  GpuCandidate(const dsk::KernelTable& table, std::string name, std::string description,
               int bug = dsk::kBugNone);
  ~GpuCandidate() override;

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  DType storage_dtype() const override { return DType::f16; }
  OpSet capabilities() const override;
  std::string unavailable() const override;
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  // Throws std::runtime_error("no CUDA device: ...") when the table cannot run kernels.
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

 private:
  struct DevTensor {
    void* p = nullptr;
    dsk::WType wt = dsk::WType::f32;
  };
  const void* mat(int layer, std::string_view role) const;
  const float* vec(int layer, std::string_view role) const;       // nullptr when absent
  const float* need_vec(int layer, std::string_view role) const;  // throws when absent
  void load_decoder_layer(int l, const WeightStore& weights);
  void load_gpt2_layer(int l, const WeightStore& weights);
  void upload_matrix(const std::string& key, const std::vector<const Tensor*>& parts);
  void upload_vector(const std::string& key, const Tensor& t);
  void free_all();

  const dsk::KernelTable& k_;
  std::string name_, description_;
  int bug_;
  ModelConfig cfg_;
  int n_positions_ = 0;  // rows of the learned position table; 0 without one
  std::map<std::string, DevTensor, std::less<>> dev_;
};

}  // namespace ds::gpu
