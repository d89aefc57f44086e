// `--fill reference`: a partial candidate completed by the reference fill.
//
// The candidate's own steps run as written; every stage it does not produce comes from a
// "fill:<step>" of the fill candidate (cpu-f16's math stored in the candidate's storage dtype).
// Both run wherever the candidate runs (its child process), so in chained mode the fill
// consumes the candidate's outputs and the candidate consumes the fill's. The runner marks
// every stage of a fill step `filled`: never judged, never a pass.
#pragma once

#include "candidate.h"

namespace ds {

class FilledCandidate final : public Candidate {
 public:
  FilledCandidate(CandidatePtr own, CandidatePtr fill);

  std::string name() const override { return own_->name(); }
  std::string description() const override;
  DType storage_dtype() const override { return own_->storage_dtype(); }
  OpSet capabilities() const override { return own_->capabilities(); }
  MoeLimits moe_limits() const override { return own_->moe_limits(); }
  std::string unavailable() const override { return own_->unavailable(); }
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  // A batched call goes to both: the candidate's steps and the fill's share one StepContext.
  bool batches(BlockKind kind) const override { return own_->batches(kind) && fill_->batches(kind); }
  bool batch_order_varies(BlockKind kind) const override { return own_->batch_order_varies(kind); }
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

  const Candidate& own() const { return *own_; }
  const Candidate& fill() const { return *fill_; }

 private:
  CandidatePtr own_, fill_;
};

}  // namespace ds
