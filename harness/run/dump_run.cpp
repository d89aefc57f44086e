#include "dump_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "fill_candidate.h"
#include "plan_check.h"
#include "registry.h"
#include "runner.h"
#include "stage_catalog.h"

namespace ds {

namespace {

// The reference fill, offering only the steps that produce a stage the dump declares absent:
// merged with the dump's own plan (plan_check.h), those and no others become `filled`.
class DeclaredFill final : public Candidate {
 public:
  DeclaredFill(CandidatePtr fill, std::set<std::string> stages, const dump::DumpCandidate* dump)
      : fill_(std::move(fill)), stages_(std::move(stages)), dump_(dump) {}
  std::string name() const override { return fill_->name(); }
  std::string description() const override { return fill_->description(); }
  DType storage_dtype() const override { return fill_->storage_dtype(); }
  OpSet capabilities() const override { return fill_->capabilities(); }
  MoeLimits moe_limits() const override { return fill_->moe_limits(); }
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override {
    std::vector<KernelStep> out;
    for (KernelStep s : fill_->plan(cfg, kind)) {
      std::erase_if(s.outputs, [&](const std::string& o) { return !stages_.count(o); });
      if (!s.outputs.empty()) out.push_back(std::move(s));
    }
    return out;
  }
  void load(const ModelConfig& cfg, const WeightStore& weights) override { fill_->load(cfg, weights); }
  // The fill's own step by name, every output it computes; FilledCandidate keeps the merged ones.
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override {
    const std::vector<BlockKind> kinds = ctx.layer == kModelLayer
                                             ? std::vector<BlockKind>{BlockKind::embed, BlockKind::head}
                                             : std::vector<BlockKind>{ctx.config->block_kind(ctx.layer)};
    for (BlockKind k : kinds)
      for (const KernelStep& f : fill_->plan(*ctx.config, k))
        if (f.name == step.name) {
          try {
            fill_->run(f, ctx, inputs, outputs);
          } catch (const std::invalid_argument& e) {
            // The fill is our own code on the dump's tensors: a shape it rejects (the cpu ops throw
            // invalid_argument) is bad dump input, exit 2; anything else stays what it is.
            throw dump::DumpError(unusable_inputs(step, ctx, inputs, e.what()));
          }
          return;
        }
    throw CandidateCrash(step.name, fmt::format("the fill has no step '{}'", step.name));
  }

 private:
  std::string unusable_inputs(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                              std::string_view why) const {
    std::string from;
    for (const auto& [name, t] : inputs) {
      constexpr std::string_view kPrev = "prev:";  // the stage at the previous step (candidate.h)
      const bool prev = name.starts_with(kPrev);
      const std::string stage = prev ? name.substr(kPrev.size()) : name;
      const std::string src = dump_->source_of(stage, ctx.step - (prev ? 1 : 0), ctx.layer);
      if (!src.empty()) from += fmt::format("; {} {}", src, shape_str(t.shape()));
    }
    return fmt::format("the reference fill cannot compute {} of {} from the dump's tensors ({}){}",
                       fmt::join(step.outputs, ", "),
                       ctx.layer == kModelLayer ? fmt::format("step {}", ctx.step)
                                                : fmt::format("layer {} at step {}", ctx.layer, ctx.step),
                       why, from);
  }

  CandidatePtr fill_;
  std::set<std::string> stages_;
  const dump::DumpCandidate* dump_;  // owned beside this fill by the FilledCandidate
};

}  // namespace

const dump::DumpCandidate* as_dump(const Candidate& cand) {
  if (const auto* d = dynamic_cast<const dump::DumpCandidate*>(&cand)) return d;
  if (const auto* f = dynamic_cast<const FilledCandidate*>(&cand)) return as_dump(f->own());
  return nullptr;
}

void check_dump_modes(std::vector<Mode>& modes, bool modes_given, const std::string& spec) {
  if (!modes_given) {
    modes = {Mode::chained};
    return;
  }
  if (std::find(modes.begin(), modes.end(), Mode::isolated) != modes.end())
    throw InputError(fmt::format(
        "--mode {}: {} is a recording of an engine that fed itself its own outputs; it cannot be handed "
        "the reference's inputs, so only --mode chained is meaningful",
        modes.size() > 1 ? "both" : "isolated", spec));
}

CandidatePtr fill_declared_absent(CandidatePtr dump, const ModelConfig& cfg, bool fill_all) {
  const auto* d = as_dump(*dump);
  std::set<std::string> stages = d->mapping().absent;
  if (fill_all)
    for (const std::string& s : dump::catalog_stage_names()) stages.insert(s);
  if (stages.empty()) return dump;
  CandidatePtr fill =
      std::make_unique<DeclaredFill>(make_fill_candidate(dump->storage_dtype()), std::move(stages), d);
  auto merged = std::make_unique<FilledCandidate>(std::move(dump), std::move(fill));
  (void)plan_coverage(cfg, *merged);  // the merged plan must be sound (throws PlanError)
  return merged;
}

}  // namespace ds
