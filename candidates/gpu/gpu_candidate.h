// The simt, cuda and mutant:<name> candidates: the fused kernels of kernels/*.cu driven
// through a dsk::KernelTable. One host implementation for all of them; only the table differs:
// SIMT on the CPU, nvcc on a GPU, or a mutant's (SIMT, one kernel with a planted bug).
//
// Stage map (decoder layer), one KernelStep per launch or fused group:
//   attn_norm       rmsnorm                       x -> attn_norm
//   fused_qkv       fused_qkv (bias in f32), q, k and v as stored
//                                                 attn_norm -> q, k, v
//   qk_norm         qk_norm (qwen3)               q, k -> q_norm, k_norm
//   rope            rope, in place on q and k     q|q_norm, k|k_norm -> q_rope, k_rope
//   attention       attention                     q_rope, cache:k_rope, cache:v -> attn
//   o_proj_add      gemv + chain-add epilogue     attn, x -> attn_out, residual_1
//   ffn_norm        rmsnorm                       residual_1 -> ffn_norm
//   gate_proj       gemv + bias in the epilogue (f32)  ffn_norm -> gate
//   up_proj         gemv + bias in the epilogue (f32)  ffn_norm -> up
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
// Stage map (Qwen3-Next gated full-attention layer; gpu_hybrid.cpp):
//   attn_norm       rmsnorm, (1 + w)              x -> attn_norm
//   q_proj          fused_qkv over q_proj (2 H d rows, [q | gate] per head), k and v
//                                                 attn_norm -> q, attn_gate, k, v
//   qk_norm         qk_norm, (1 + w)              q, k -> q_norm, k_norm
//   rope            rope on the first rotary_dim of each head (partial, neox)
//                                                 q_norm, k_norm -> q_rope, k_rope
//   attention       attention                     q_rope, cache:k_rope, cache:v -> attn
//   attn_gate_mul   attn_gate (sigmoid)           attn, attn_gate -> attn_gated
//   o_proj_add      gemv + chain-add              attn_gated, x -> attn_out, residual_1
//   (then the decoder's SwiGLU MLP steps, ffn_norm with (1 + w))
//
// Stage map (Gated DeltaNet layer; gpu_hybrid.cpp):
//   attn_norm       rmsnorm, (1 + w)              x -> attn_norm
//   gdn_in_proj     gemv over packed [in_proj_qkv | in_proj_z], and gdn_gates (the beta / alpha
//                   GEMV rows with their sigmoid / softplus epilogues)
//                                                 attn_norm -> qkv_mixed, z_gate, beta, g
//   conv            ssm_conv, or op C / D on decode steps (--gdn-variant), f32
//                                                 qkv_mixed, prev:conv_state -> conv, conv_state
//   l2norm          l2norm (q also scaled by d_k^-0.5)    conv -> q_l2, k_l2
//   gdn             gdn, or op A / B on decode steps, f32
//                                                 q_l2, k_l2, conv (v), g, beta, prev:gdn_state
//                                                 -> gdn_out, gdn_state
//   gated_norm      gated_rmsnorm                 gdn_out, z_gate -> gated_norm
//   out_proj_add    gemv + chain-add              gated_norm, x -> out_proj, residual_1
//   (then the MLP steps)
// The GDN kernels work in f32: their f16 stage inputs are widened exactly on the way in. A
// decode step (T == 1, step > 0) runs op B if the run requests GdnInplaceIds, else op A for
// GdnInplace, else the plain op; op D for SsmConvUpdateIds, else op C, else plain. The fused
// ops work on a two-slot state cache: prev:<state> is placed into a slot first and the op
// rewrites the cache in place; with ids, odd decode steps put the prior state in the OTHER
// slot, so the gather path runs, not only the identity one.
//
// Stage map (mixture-of-experts decoder layer, qwen3moe and Mixtral; gpu_moe.cpp): the decoder's
// attention steps, then
//   ffn_norm         rmsnorm                      residual_1 -> ffn_norm
//   moe_route        moe_route: router GEMV, the rule's softmax and top-k, the routing weights
//                                                 ffn_norm -> router_logits, expert_ids, expert_weights
//   moe_experts_add  moe_experts: grouped SwiGLU experts, f32 weighted combine + chain-add
//                                                 ffn_norm, expert_ids, expert_weights, residual_1
//                                                 -> moe_out, residual_2
// With Qwen3-Next's shared expert (in both of its layer kinds) the last step becomes
//   moe_experts      moe_experts, no chain-add    ffn_norm, expert_ids, expert_weights -> moe_out
//   shexp            moe_experts as one expert of top-1 at weight 1 (f32 activation)
//                                                 ffn_norm -> shexp_out
//   shexp_gate_add   moe_shexp_gate_add: the gate's sigmoid GEMV row, the f32 sum + chain-add
//                                                 ffn_norm, moe_out, shexp_out, residual_1
//                                                 -> shexp_gate, ffn_out, residual_2
//
// Model level: embedding (+ learned positions pos0.. for GPT-2) tokens -> embed;
// final_norm (rmsnorm, (1 + w) for Qwen3-Next) or ln_f (GPT-2 layernorm) x -> final_norm;
// lm_head gemv -> logits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "candidate.h"
#include "kernels.h"

namespace ds::gpu {

// The kernels' WType for a GGUF block-quantized type (QuantMatrix::type, "Q4_K"); nullopt for
// any other name. Every block type the loader decodes has one.
std::optional<dsk::WType> kernel_wtype(std::string_view ggml_name);

class GpuCandidate final : public Candidate {
 public:
  // `table`: the production kernels of one build, or a mutant's (kernels/mutants/mutants.h);
  // `name` the registry name; `fused_gdn_ops`: declare (and run) the fused GDN decode ops A-D, or
  // only the plain ones.
  GpuCandidate(const dsk::KernelTable& table, std::string name, std::string description,
               bool fused_gdn_ops = true);
  // Kernels in a module opened on first use (a mutant's, gpu/mutants.h; cuda's, gpu/cuda_kernels.h):
  // `open` returns the table, or null with why not; `backend` is the one it will have ("simt" or
  // "cuda"). load() and unavailable() ask it, the constructor never does, so that listing the
  // candidate opens and builds nothing.
  using OpenKernels = std::function<const dsk::KernelTable*(std::string& why)>;
  GpuCandidate(OpenKernels open, const char* backend, std::string name, std::string description);
  ~GpuCandidate() override;

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  DType storage_dtype() const override { return DType::f16; }
  OpSet capabilities() const override;
  MoeLimits moe_limits() const override { return {dsk::kMoeMaxTopK, dsk::kMoeMaxExperts}; }
  std::string unavailable() const override;
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  // Throws std::runtime_error("no CUDA device: ...") when the table cannot run kernels.
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;
  // Batches every block kind: the row-wise kernels run once over every sequence's rows;
  // embedding, RoPE and attention one launch per sequence on its rows and its own KV cache rows;
  // the GDN conv and recurrence one launch of fused op D / op B over every sequence of a decode
  // call, through a slot cache laid out by the call's `ids` (SeqSpan::state_slot), else one
  // launch per sequence.
  bool batches(BlockKind /*kind*/) const override { return true; }

  // On SIMT "device" memory is host memory: a weight matrix the kernels can read as stored is
  // read where the model holds it, so the candidate (and its child process, through fork) adds
  // no copy of it. Kernels only read weights; Candidate::load's contract keeps them alive.
  bool reads_weights_in_place() const { return std::string_view(k_.backend) == "simt"; }
  // The stored matrices of a layer that load() packs with others into one buffer (GDN's
  // [qkv | z] and [beta | alpha]), by block kind. On SIMT every other matrix is read in place and
  // these are copied: the memory estimate counts them.
  static std::vector<std::string_view> packed_roles(BlockKind kind);
  // Whether the last load() chose the checked flavour of the kernels (gpu/checked_kernels.h): the
  // simt candidate under the hazard checker alone (`--simt-racecheck` without `--race-check`) or the
  // schedule rerun alone (`--race-check` without `--simt-racecheck`: it interleaves them).
  bool runs_checked_kernels() const { return checked_; }
  // Elements of the matrices the last load() copied (the test holding packed_roles to it).
  std::uint64_t copied_matrix_elements() const { return copied_matrix_elements_; }

 private:
  // The sequences of a call: a batched call's, else the call's one sequence.
  static std::vector<SeqSpan> seq_spans(const StepContext& ctx);
  // The KV cache input holds every sequence's pos0 + n_tokens rows, else the step is misfed.
  void check_cache_rows(const StepContext& ctx, int rows) const;
  // Element `at` of an f16 device buffer.
  static void* f16_at(void* p, std::int64_t at) { return static_cast<std::uint16_t*>(p) + at; }
  struct DevTensor {
    void* p = nullptr;
    dsk::WType wt = dsk::WType::f32;
    bool borrowed = false;  // the model's own bytes (SIMT), not an allocation of ours
  };
  const void* mat(int layer, std::string_view role) const;
  const float* vec(int layer, std::string_view role) const;       // nullptr when absent
  const float* need_vec(int layer, std::string_view role) const;  // throws when absent
  void load_decoder_layer(int l, const WeightStore& weights);
  void load_gpt2_layer(int l, const WeightStore& weights);
  void load_mlp(int l, const WeightStore& weights);
  void load_gdn_layer(int l, const WeightStore& weights);  // gpu_hybrid.cpp
  void load_moe(int l, const WeightStore& weights);        // gpu_moe.cpp
  // Layer l's expert gate and up matrices, in one type (gpu_moe.cpp).
  void upload_gate_up(int l, const WeightStore& weights, std::string_view gate, std::string_view up);
  static std::vector<KernelStep> moe_steps(bool shared_expert);  // gpu_moe.cpp
  // The MoE steps (gpu_moe.cpp); false when `step` is not one of them.
  bool run_moe(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs, TensorMap& outputs);
  bool run_shared_expert(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                         TensorMap& outputs);
  // The Qwen3-Next steps (gpu_hybrid.cpp); false when `step` is not one of them.
  bool run_hybrid(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                  TensorMap& outputs);
  void conv_step(int layer, int step, const Tensor& x, const Tensor& prev, TensorMap& out) const;
  void gdn_step(int step, const TensorMap& inputs, TensorMap& out) const;
  // The same two steps of a batched call (gpu_gdn_batch.cpp).
  void conv_batch(int layer, const StepContext& ctx, const TensorMap& inputs, TensorMap& out) const;
  void gdn_batch(const StepContext& ctx, const TensorMap& inputs, TensorMap& out) const;
  // The states between the stage layout and the kernels': conv taps [C, K-1] (zeros for an empty
  // prev) and the GDN state [nv, dk, dv], and back to their stages (f16).
  std::vector<float> conv_taps(const Tensor& prev) const;
  Tensor conv_state_stage(const std::vector<float>& taps) const;
  std::vector<float> gdn_slot(const Tensor& prev) const;
  Tensor gdn_state_stage(const std::vector<float>& state) const;
  float norm_offset() const { return cfg_.norm_plus_one ? 1.0f : 0.0f; }  // (1 + w) norms
  // as_f32: converted to f32 whatever the parts' dtype (a copy).
  void upload_matrix(const std::string& key, const std::vector<const Tensor*>& parts, bool as_f32 = false);
  // The weight `name` as stored: a block-quantized matrix in its blocks, else upload_matrix's way.
  void upload_weight(const std::string& key, const WeightStore& weights, std::string_view name);
  // The weights `names` packed into one matrix (rows after rows).
  void upload_packed(const std::string& key, const WeightStore& weights,
                     const std::vector<std::string_view>& names);
  // `name` when it is held quantized in a type the kernels read (every type the loader decodes),
  // with that type; q null otherwise.
  struct Blocks {
    const QuantMatrix* q = nullptr;
    dsk::WType wt{};
  };
  Blocks readable_quantized(const WeightStore& weights, std::string_view name) const;
  // Layer l's q, k and v projections of x: one fused_qkv launch, or a GEMV each when they are
  // stored in different types.
  void qkv_projection(int l, const void* x, void* q, void* k, void* v, int T, int q_rows, int kv_rows,
                      int cols) const;
  void upload_vector(const std::string& key, const Tensor& t);
  void free_all();

  // The kernels load() chose (choose_kernels): the table the candidate was made with, or for this
  // build's SIMT kernels under the hazard checker or the schedule rerun their checked flavour
  // (gpu/checked_kernels.h).
  void choose_kernels();
  OpenKernels open_;  // empty: made_with_ is the table
  const dsk::KernelTable* made_with_;
  dsk::KernelTable table_;
  const dsk::KernelTable& k_ = table_;
  bool checked_ = false;
  std::string name_, description_;
  bool fused_gdn_ops_;
  ModelConfig cfg_;
  int n_positions_ = 0;  // rows of the learned position table; 0 without one
  std::map<std::string, DevTensor, std::less<>> dev_;
  std::uint64_t copied_matrix_elements_ = 0;
};

}  // namespace ds::gpu
