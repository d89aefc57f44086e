// What a candidate's plans produce for one model, checked before anything runs: the coverage
// gate (every stage the model has is produced by some step, or `--fill reference` computes
// it), the capability gate of a partial candidate (only the ops of the stages it computes),
// and the merged plan of a partial candidate and the reference fill.
#pragma once

#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "candidate.h"

namespace ds {

// A plan that cannot be run as written (an input no step produces, a stage produced twice, an
// output that is no stage of its block, a cycle): the candidate is broken, exit 2.
struct PlanError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The block kinds a model runs, model-level ones included, in execution order.
std::vector<BlockKind> model_block_kinds(const ModelConfig& cfg);

struct Coverage {
  struct Gap {
    BlockKind kind;
    std::vector<std::string> stages;  // produced by no step, catalog order
  };
  std::vector<Gap> gaps;
  std::set<std::pair<BlockKind, std::string>> produced;  // (kind, stage) the candidate computes
  bool complete() const { return gaps.empty(); }
  std::size_t missing_count() const;
  std::string describe_gaps() const;  // "decoder blocks: q, k; head: logits"
};

// Probes every plan the model needs; throws PlanError on a malformed plan.
Coverage plan_coverage(const ModelConfig& cfg, const Candidate& cand);

// The ops of `required` that the stages in `cov.produced` exercise (stage_catalog.h).
OpSet covered_ops(const OpSet& required, const Coverage& cov);

// The coverage gate's refusal text, naming the stages and block kinds no step produces.
std::string coverage_refusal(const ModelConfig& cfg, const Candidate& cand, const Coverage& cov);

// The stage map of a partial candidate completed by the fill: the candidate's own steps, plus
// the fill's steps for every stage it does not produce (renamed "fill:<step>", outputs limited
// to those stages), in an order that respects every input. Throws PlanError.
std::vector<KernelStep> merge_with_fill(const ModelConfig& cfg, BlockKind kind,
                                        const std::vector<KernelStep>& own,
                                        const std::vector<KernelStep>& fill);
inline constexpr std::string_view kFillStepPrefix = "fill:";
bool is_fill_step(const KernelStep& step);

}  // namespace ds
