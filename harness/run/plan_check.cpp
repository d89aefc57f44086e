#include "plan_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "stage_catalog.h"

namespace ds {

namespace {

std::string kind_label(BlockKind k) {
  if (k == BlockKind::embed || k == BlockKind::head) return std::string(block_kind_name(k));
  return fmt::format("{} blocks", block_kind_name(k));
}

// The same-step stage an input name depends on: "<stage>" and "cache:<stage>" (the cache holds
// this step's rows too); none for "x", "tokens" and "prev:<stage>".
std::optional<std::string> same_step_dependency(const std::string& input) {
  if (input == "x" || input == "tokens" || input.rfind("prev:", 0) == 0) return std::nullopt;
  if (input.rfind("cache:", 0) == 0) return input.substr(6);
  return input;
}

bool is_stage_of(const std::vector<std::string>& stages, std::string_view s) {
  return std::find(stages.begin(), stages.end(), s) != stages.end();
}

// The structural rules of one block's plan: outputs are stages of the block, each produced once;
// every input is a known name.
void check_plan(const ModelConfig& cfg, BlockKind kind, const std::vector<KernelStep>& plan,
                const std::string& who) {
  const std::vector<std::string> stages = expected_stages(cfg, kind);
  std::map<std::string, std::string> producer;
  for (const KernelStep& s : plan) {
    if (s.outputs.empty())
      throw PlanError(
          fmt::format("{}: step '{}' of its {} plan produces nothing", who, s.name, kind_label(kind)));
    for (const std::string& o : s.outputs) {
      if (!is_stage_of(stages, o))
        throw PlanError(
            fmt::format("{}: step '{}' of its {} plan produces '{}', which is not a stage of {} "
                        "in this model (stages: {})",
                        who, s.name, kind_label(kind), o, kind_label(kind), fmt::join(stages, ", ")));
      if (auto [it, fresh] = producer.emplace(o, s.name); !fresh)
        throw PlanError(fmt::format("{}: stage '{}' of {} is produced twice, by steps '{}' and '{}'", who, o,
                                    kind_label(kind), it->second, s.name));
    }
    for (const std::string& in : s.inputs) {
      const auto dep = same_step_dependency(in);
      if (dep && !is_stage_of(stages, *dep))
        throw PlanError(
            fmt::format("{}: step '{}' of its {} plan reads '{}', which is not an input name (x, "
                        "tokens, <stage>, cache:<stage>, prev:<stage> with a stage of {})",
                        who, s.name, kind_label(kind), in, kind_label(kind)));
      if (in.rfind("prev:", 0) == 0 && !is_stage_of(stages, in.substr(5)))
        throw PlanError(fmt::format("{}: step '{}' reads '{}', which names no stage of {}", who, s.name, in,
                                    kind_label(kind)));
    }
  }
}

}  // namespace

std::vector<BlockKind> model_block_kinds(const ModelConfig& cfg) {
  std::vector<BlockKind> kinds = {BlockKind::embed};
  for (int l = 0; l < cfg.n_layers; ++l)
    if (std::find(kinds.begin(), kinds.end(), cfg.block_kind(l)) == kinds.end())
      kinds.push_back(cfg.block_kind(l));
  kinds.push_back(BlockKind::head);
  return kinds;
}

std::size_t Coverage::missing_count() const {
  std::size_t n = 0;
  for (const auto& g : gaps) n += g.stages.size();
  return n;
}

std::string Coverage::describe_gaps() const {
  std::vector<std::string> parts;
  for (const auto& g : gaps)
    parts.push_back(fmt::format("{}: {}", kind_label(g.kind), fmt::join(g.stages, ", ")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

Coverage plan_coverage(const ModelConfig& cfg, const Candidate& cand) {
  Coverage cov;
  for (BlockKind kind : model_block_kinds(cfg)) {
    const std::vector<KernelStep> plan = cand.plan(cfg, kind);
    check_plan(cfg, kind, plan, fmt::format("candidate {}", cand.name()));
    Coverage::Gap gap{kind, {}};
    for (const std::string& s : expected_stages(cfg, kind)) {
      const bool made = std::any_of(plan.begin(), plan.end(), [&](const KernelStep& k) {
        return std::find(k.outputs.begin(), k.outputs.end(), s) != k.outputs.end();
      });
      if (made)
        cov.produced.insert({kind, s});
      else
        gap.stages.push_back(s);
    }
    if (!gap.stages.empty()) cov.gaps.push_back(std::move(gap));
  }
  return cov;
}

OpSet covered_ops(const OpSet& required, const Coverage& cov) {
  OpSet ops;
  for (const auto& [kind, stage] : cov.produced) ops |= stage_ops(kind, stage);
  return ops.intersect(required);
}

std::string coverage_refusal(const ModelConfig& cfg, const Candidate& cand, const Coverage& cov) {
  return fmt::format(
      "REFUSED by the coverage gate: {} does not produce {} stage(s) that {} has\n"
      "  Not produced: {}\n"
      "  -> Add `--fill reference` to compute them with the reference at the candidate's storage dtype\n"
      "     ({}; filled stages are shown as `filled`, never judged), or produce them in the candidate's\n"
      "     plan. Nothing was computed.",
      cand.name(), cov.missing_count(), cfg.name, cov.describe_gaps(), dtype_name(cand.storage_dtype()));
}

bool is_fill_step(const KernelStep& step) { return step.name.rfind(kFillStepPrefix, 0) == 0; }

std::vector<KernelStep> merge_with_fill(const ModelConfig& cfg, BlockKind kind,
                                        const std::vector<KernelStep>& own,
                                        const std::vector<KernelStep>& fill) {
  const std::vector<std::string> stages = expected_stages(cfg, kind);
  std::set<std::string> covered;
  for (const KernelStep& s : own) covered.insert(s.outputs.begin(), s.outputs.end());
  std::vector<KernelStep> steps = own;
  for (const KernelStep& f : fill) {
    KernelStep k{fmt::format("{}{}", kFillStepPrefix, f.name), f.inputs, {}};
    for (const std::string& o : f.outputs)
      if (!covered.count(o) && is_stage_of(stages, o)) k.outputs.push_back(o);
    if (!k.outputs.empty()) steps.push_back(std::move(k));
  }
  // Order: repeatedly the runnable step whose first output comes first in the catalog.
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < steps.size(); ++i)
    for (const std::string& o : steps[i].outputs) producer.emplace(o, i);
  auto rank = [&](const KernelStep& s) {
    std::size_t best = stages.size();
    for (const std::string& o : s.outputs)
      best = std::min(best, std::size_t(std::find(stages.begin(), stages.end(), o) - stages.begin()));
    return best;
  };
  std::vector<KernelStep> ordered;
  std::vector<bool> done(steps.size(), false);
  while (ordered.size() < steps.size()) {
    std::optional<std::size_t> pick;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (const std::string& in : steps[i].inputs) {
        const auto dep = same_step_dependency(in);
        if (!dep) continue;
        auto p = producer.find(*dep);
        if (p == producer.end())
          throw PlanError(
              fmt::format("step '{}' of the {} plan reads '{}', which neither the candidate nor the "
                          "fill produces",
                          steps[i].name, kind_label(kind), in));
        ready = ready && (p->second == i ? false : done[p->second]);
      }
      if (ready && (!pick || rank(steps[i]) < rank(steps[*pick]))) pick = i;
    }
    if (!pick) {
      std::vector<std::string> stuck;
      for (std::size_t i = 0; i < steps.size(); ++i)
        if (!done[i]) stuck.push_back(steps[i].name);
      throw PlanError(fmt::format("the {} plan cannot be ordered: steps {} wait on each other",
                                  kind_label(kind), fmt::join(stuck, ", ")));
    }
    done[*pick] = true;
    ordered.push_back(steps[*pick]);
  }
  return ordered;
}

}  // namespace ds
