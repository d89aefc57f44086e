// Crash isolation: the candidate runs in a child process forked after its weights are loaded.
// Each step's inputs go down a pipe and its outputs come back; a segfault, abort or a hang past
// the timeout in the child (in load() or a step) becomes a CandidateCrash naming the step, and the harness,
// its trace and the reference are untouched.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>

#include "candidate.h"

namespace ds {

class ChildCandidate final : public Candidate {
 public:
  // Takes ownership of `inner`; `timeout_s` bounds load() and every step (<= 0: waits forever).
  ChildCandidate(CandidatePtr inner, double timeout_s);
  ~ChildCandidate() override;

  std::string name() const override { return inner_->name(); }
  std::string description() const override { return inner_->description(); }
  DType storage_dtype() const override { return inner_->storage_dtype(); }
  OpSet capabilities() const override { return inner_->capabilities(); }
  MoeLimits moe_limits() const override { return inner_->moe_limits(); }
  std::string unavailable() const override { return inner_->unavailable(); }
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override {
    return inner_->plan(cfg, kind);
  }
  bool batches(BlockKind kind) const override { return inner_->batches(kind); }
  bool batch_order_varies(BlockKind kind) const override { return inner_->batch_order_varies(kind); }
  // Loads in the parent, then forks: the child inherits the loaded weights copy-on-write.
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

 private:
  void serve();  // the child's loop
  void stop_child();
  int end_child_now();  // ends the child and all it started, reaps it; its wait status
  bool child_alive();   // reaps a child that died (its helpers may still hold the reply pipe)
  // A load's answer is "ok" or an error message.
  static constexpr std::uint64_t kMaxLoadReply = std::uint64_t(1) << 20;

  CandidatePtr inner_;
  double timeout_s_;
  ModelConfig cfg_;
  pid_t child_ = -1;
  bool reaped_ = false;  // child_ has died and been reaped, with this status
  int reaped_status_ = 0;
  int to_child_ = -1, from_child_ = -1;
};

}  // namespace ds
