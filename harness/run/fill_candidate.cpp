#include "fill_candidate.h"

#include <fmt/format.h>

#include "plan_check.h"
#include "stage_catalog.h"

namespace ds {

FilledCandidate::FilledCandidate(CandidatePtr own, CandidatePtr fill)
    : own_(std::move(own)), fill_(std::move(fill)) {}

std::string FilledCandidate::description() const {
  return fmt::format("{} (stages it does not produce: {})", own_->description(), fill_->description());
}

std::vector<KernelStep> FilledCandidate::plan(const ModelConfig& cfg, BlockKind kind) const {
  return merge_with_fill(cfg, kind, own_->plan(cfg, kind), fill_->plan(cfg, kind));
}

void FilledCandidate::load(const ModelConfig& cfg, const WeightStore& weights) {
  own_->load(cfg, weights);
  fill_->load(cfg, weights);
}

void FilledCandidate::run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                          TensorMap& outputs) {
  if (!is_fill_step(step)) {
    own_->run(step, ctx, inputs, outputs);
    return;
  }
  // The fill's own step, with every output it computes; only the merged step's are handed on.
  const std::string name = step.name.substr(kFillStepPrefix.size());
  const std::vector<BlockKind> kinds = ctx.layer == kModelLayer
                                           ? std::vector<BlockKind>{BlockKind::embed, BlockKind::head}
                                           : std::vector<BlockKind>{ctx.config->block_kind(ctx.layer)};
  for (BlockKind k : kinds)
    for (const KernelStep& f : fill_->plan(*ctx.config, k)) {
      if (f.name != name) continue;
      TensorMap all;
      fill_->run(f, ctx, inputs, all);
      for (const std::string& o : step.outputs)
        if (auto it = all.find(o); it != all.end()) outputs[o] = std::move(it->second);
      return;
    }
  throw CandidateCrash(step.name, fmt::format("the fill has no step '{}'", name));
}

}  // namespace ds
