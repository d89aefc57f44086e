// BaselineFeature (run_features.h): --baseline in the phases it plugs into.
#include <fmt/format.h>

#include "judge_stage.h"
#include "run_state.h"

namespace ds {

void BaselineFeature::check_usage(const RunOptions& opt) { check_baseline_usage(opt); }

void BaselineFeature::make(const RunOptions& opt, const ModelConfig& header) {
  if (!opt.baseline.empty()) baseline_.emplace(opt, header);
}

std::optional<CandidateMemory> BaselineFeature::memory() const {
  return baseline_ ? std::optional(candidate_memory(baseline_->candidate())) : std::nullopt;
}

std::string BaselineFeature::load(const ModelConfig& cfg, const WeightStore& weights, const RunOptions& opt) {
  if (!baseline_) return {};
  try {
    baseline_->load(cfg, weights, opt.isolate_process, opt.timeout_s);
  } catch (const BaselineCrash& crash) {
    return fmt::format("baseline {} crashed while loading: {}", baseline_->name(), crash.what());
  }
  return {};
}

std::vector<KernelStep> BaselineFeature::plan(BlockKind kind) const {
  return baseline_ ? baseline_->plan(kind) : std::vector<KernelStep>{};
}

std::string BaselineFeature::name() const { return baseline_ ? baseline_->name() : std::string(); }

nlohmann::json BaselineFeature::json() const { return baseline_ ? baseline_->json() : nlohmann::json(); }

// B's run of this block on the inputs the candidate got (isolated mode). A crash of B records
// the stages of its step crashed, under B's name, and stops the run.
void BaselineFeature::block_ran(RunState& s, const BlockRun& b, const Baseline::Resolve& input) {
  try {
    block_ = baseline_->run_block(b.kind, b.step, b.layer, b.pos0, b.n_tokens, input);
    if (b.kind == BlockKind::head) logits_ = block_;
  } catch (const BaselineCrash& crash) {
    for (StageResult& r : baseline_->crashed_stages(crash, b.step, b.layer, b.mode, b.ref))
      s.record(std::move(r), nullptr, nullptr);
    throw;
  }
}

void BaselineFeature::judge(RunState& s, const LaunchFindings& findings, const StageCall& c) {
  std::variant<Tensor, StageResult> against =
      baseline_->target(block_, {c.step, c.layer, std::string(c.stage)}, c.mode, c.storage, c.ref);
  if (auto* t = std::get_if<Tensor>(&against)) {
    StageCall no_floor = c;
    no_floor.floor = nullptr;
    judge_stage(s, findings, no_floor, *t);
  } else {
    s.record(std::move(std::get<StageResult>(against)), nullptr, nullptr);
  }
}

const Tensor* BaselineFeature::logits(const TensorMap&) const {
  const auto it = logits_.find("logits");
  return it == logits_.end() ? nullptr : &it->second;
}

}  // namespace ds
