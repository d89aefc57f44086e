#include "gate.h"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "contracts.h"
#include "registry.h"
#include "runner.h"
#include "wire.h"

namespace ds {

namespace {

// A MoE model past the top-k or expert count the candidate's kernels declare (Candidate::moe_limits):
// the full refusal and its one-line reason, or nullopt.
std::optional<std::pair<std::string, std::string>> moe_limit_refusal(const ModelConfig& cfg,
                                                                     const Candidate& cand) {
  if (!cfg.moe()) return std::nullopt;
  const MoeLimits lim = cand.moe_limits();
  std::string why;
  if (lim.max_top_k > 0 && cfg.n_experts_used > lim.max_top_k)
    why = fmt::format("top-{} routing, past the top-{} its MoE kernels keep", cfg.n_experts_used,
                      lim.max_top_k);
  else if (lim.max_experts > 0 && cfg.n_experts > lim.max_experts)
    why = fmt::format("{} experts, past the {} its MoE kernels rank", cfg.n_experts, lim.max_experts);
  if (why.empty()) return std::nullopt;
  return std::pair{
      fmt::format("REFUSED by the capability gate: {} cannot serve {} ({}): {} ({} routing). "
                  "Nothing was computed.",
                  cand.name(), cfg.name, family_name(cfg.family), why, moe_routing_name(cfg.moe_routing)),
      why};
}

}  // namespace

GateAnswer gate_candidate(const ModelConfig& cfg, const Candidate& cand, bool fill) {
  GateAnswer a;
  // In a forked child: asking a CUDA runtime for its devices initialises the driver, and a
  // process that did may not fork a child that uses CUDA.
  if (const std::string why = wire::run_forked("availability", 60, [&] { return cand.unavailable(); });
      !why.empty()) {
    a.pass = false;
    a.unavailable = true;
    a.reason = why;
    a.refusal = fmt::format("UNAVAILABLE: {} cannot run on this machine: {}. Nothing was computed.",
                            cand.name(), why);
    return a;
  }
  const OpSet required = ref::required_ops(cfg);
  a.have = cand.capabilities();
  // A dense-only candidate's plan holds a dense MLP, which the plan check below would report as
  // stages a MoE model lacks: the missing routing ops are the reason, so they are named first.
  const OpSet moe_ops{Op::MoeSoftmaxTopK, Op::MoeTopKSoftmax, Op::MoeNormTopK, Op::MoeExperts,
                      Op::MoeSharedExpert};
  if (!fill && !a.have.contains(required.intersect(moe_ops))) {
    a.pass = false;
    a.need = required;
    a.missing = required.minus(a.have);
    a.refusal = capability_refusal(cfg, cand, required).value_or("");
    a.reason = fmt::format("missing ops {}", a.missing.str());
    return a;
  }
  if (auto refusal = moe_limit_refusal(cfg, cand)) {
    a.pass = false;
    a.need = required;
    a.refusal = refusal->first;
    a.reason = refusal->second;
    return a;
  }
  a.coverage = plan_coverage(cfg, cand);
  if (!fill && !a.coverage.complete()) {
    a.pass = false;
    a.need = required;
    a.missing = required.minus(a.have);
    a.refusal = coverage_refusal(cfg, cand, a.coverage);
    a.reason = fmt::format("does not produce {} (add --fill reference)", a.coverage.describe_gaps());
    return a;
  }
  if (fill && a.coverage.produced.empty()) {
    a.pass = false;
    a.need = required;
    a.reason = "produces none of the model's stages: nothing of it would be judged";
    a.refusal = fmt::format(
        "REFUSED by the coverage gate: {} produces none of the stages {} has ({} blocks), so nothing of it "
        "would be judged. Nothing was computed.",
        cand.name(), cfg.name, cfg.arch_name());
    return a;
  }
  // A partial candidate answers only for the ops of the stages it computes; the fill for the rest.
  a.need = fill ? covered_ops(required, a.coverage) : required;
  a.missing = a.need.minus(a.have);
  if (auto refusal = capability_refusal(cfg, cand, a.need)) {
    a.pass = false;
    a.refusal = *refusal;
    a.reason = fmt::format("missing ops {}", a.missing.str());
    return a;
  }
  if (fill && !a.coverage.complete()) {
    Coverage rest;
    for (const auto& g : a.coverage.gaps)
      for (const auto& s : g.stages) rest.produced.insert({g.kind, s});
    const CandidatePtr filler = make_fill_candidate(cand.storage_dtype());
    const OpSet fill_missing = covered_ops(required, rest).minus(filler->capabilities());
    if (!fill_missing.empty()) {
      a.pass = false;
      a.reason = fmt::format("the reference fill lacks {} for the stages it would fill", fill_missing.str());
      a.refusal = fmt::format(
          "REFUSED: the reference fill cannot compute the stages {} leaves out for {}\n"
          "  Not produced by the candidate: {}\n"
          "  The fill lacks:                {}\n"
          "  -> Produce those stages in the candidate's plan. Nothing was computed.",
          cand.name(), cfg.name, a.coverage.describe_gaps(), fill_missing.str());
    }
  }
  return a;
}

}  // namespace ds
