// cpu-f16 (and its mutants): the math of every family the reference implements (decoders,
// GPT-2, Qwen3-Next's gated attention and Gated DeltaNet layers) in f32 with every stage output
// stored as f16, i.e. a correct low-precision implementation. The selftest variants crash on purpose (the
// kernel mutants are the SIMT kernels in candidates/gpu).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "candidate.h"
#include "cpu_ops.h"

namespace ds::cpu {

enum class PlantedBug {
  none,
  // Harness self-tests of crash isolation: die in layer 1's attention step.
  segv_at_layer1,
  abort_at_layer1,
  hang_at_layer1,
  // A small systematic error (the layer output scaled by 1.01) from layer 3 on: compounds in
  // chained mode; the harness must place the start of drift at layer 3.
  drift_from_layer3,
  // Biases below one f16 ULP per element, on every element (docs/mutants.md, "cpu-f16 mutants").
  residual_scale,       // residual_1 scaled by 1 + 2^-12 in f32 before it is stored
  layernorm_n_minus_1,  // GPT-2's LayerNorms divide the variance by N - 1 instead of N
  // The GDN q/k l2-norm without its epsilon: the same as the correct one until a row's sum of
  // squares nears 1e-6 (the probe tiny-gdn-qk drives it there).
  l2norm_no_eps,
  // Mixture-of-experts routing and combine bugs (docs/moe.md), one rule broken each.
  moe_no_renorm,           // norm_topk_prob's renormalisation of the chosen weights forgotten
  moe_expert_off_by_one,   // the combine reads expert e + 1's weights for chosen expert e
  moe_rule_swapped,        // softmax after top-k for a softmax-before model (and the reverse)
  moe_shexp_gate_dropped,  // the shared expert added ungated: ffn_out = moe_out + shexp_out
  moe_shexp_gate_raw,      // the shared-expert gate's logit used without its sigmoid
  // Batched bug classes (docs/batches.md), each wrong only in a batched call (`run --batch`):
  batch_seq_offset,      // attention reads a sequence's KV cache one row early (into its neighbour's)
  batch_wrong_position,  // RoPE rotates a sequence's rows by the next sequence's positions
  batch_neighbour_row,   // RMSNorm of a sequence's last row takes its scale from the next row
  // Not a bug: a batched call's dense projections split-K over as many chunks as the batch has
  // sequences (another order of the same sums), declared by Candidate::batch_order_varies.
  batch_split_k,
  batch_split_k_undeclared,  // the same order, not declared: batch invariance holds it bit for bit
};

// Every planted variant of cpu-f16, one row each: the name it is registered under and what it
// does. The bug itself is planted in run(), next to the correct line.
struct CpuVariant {
  PlantedBug bug;
  const char* name;
  const char* what;
};
const std::vector<CpuVariant>& planted_variants();
// A MoE layer's FFN steps, ffn_norm .. residual_2, with the shared expert's when it has one
// (cpu_moe.cpp).
std::vector<KernelStep> moe_steps(bool shared_expert);

class CpuCandidate final : public Candidate {
 public:
  explicit CpuCandidate(PlantedBug bug = PlantedBug::none) : bug_(bug) {}
  // The op set of a first GPU kernel set (no QK-norm, no bias): the kernel set that printed
  // garbage for Qwen3 and silently dropped Qwen2's bias. The gate must refuse both models.
  static CandidatePtr v1_ops();
  // What `--fill reference` computes a partial candidate's other stages with: this math, every
  // stage output stored in the partial candidate's storage dtype.
  static CandidatePtr fill(DType storage);

  std::string name() const override;
  std::string description() const override;
  DType storage_dtype() const override { return storage_; }
  OpSet capabilities() const override;
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  // Batches every block kind (cpu_batch.h).
  bool batches(BlockKind /*kind*/) const override { return true; }
  bool batch_order_varies(BlockKind kind) const override {
    return bug_ == PlantedBug::batch_split_k && kind != BlockKind::embed;  // an embedding sums nothing
  }
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

 private:
  // A weight where the harness holds it, read a row at a time (cpu_ops.h).
  const WeightMat& w(int layer, std::string_view role) const;
  // A vector weight (a norm's, a bias, a per-head parameter) as f32, copied at load.
  const std::vector<float>& vec(int layer, std::string_view role) const;
  std::span<const float> b(int layer, std::string_view role) const;   // empty when absent
  std::vector<float> norm_w(int layer, std::string_view role) const;  // (1 + w) when norm_plus_one
  // The Qwen3-Next steps (cpu_hybrid.cpp); false when `step` is not one of them.
  bool run_hybrid(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                  TensorMap& outputs);
  // The mixture-of-experts steps (cpu_moe.cpp); false when `step` is not one of them.
  bool run_moe(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs, TensorMap& outputs);
  bool run_shared_expert(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                         TensorMap& outputs);
  void crash_if_planted() const;
  // The batched bug classes' planted lines (PlantedBug::batch_*); correct without them.
  int cache_start(const SeqSpan& q) const;
  int position_of(const StepContext& ctx, const SeqSpan& q) const;
  // A dense projection: linear, split-K by the batch's size in the batch_split_k variants.
  Mat project(const StepContext& ctx, const Mat& x, const WeightMat& w, std::span<const float> bias) const;
  void plant_neighbour_row(const StepContext& ctx, const Mat& x, const std::vector<float>& w, Mat& y) const;

  PlantedBug bug_;
  bool v1_ = false;
  bool fill_ = false;
  DType storage_ = DType::f16;
  ModelConfig cfg_;
  std::map<std::string, WeightMat, std::less<>> w_;
  std::map<std::string, std::vector<float>, std::less<>> vec_;  // the rank-1 weights, as f32
};

}  // namespace ds::cpu
