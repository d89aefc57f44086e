// `run --baseline B` (docs/cli.md): the candidate judged against another candidate instead of the
// oracle. B runs each block's plan on the very inputs the candidate gets in isolated mode (the
// oracle's stages at the storage dtype), so the comparison isolates what differs between the two
// kernels: new fused kernels against the legacy ones, a fused GDN op against the plain ones. The
// oracle still runs: it provides those inputs and the greedy tokens.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "candidate.h"
#include "result.h"
#include "run_options.h"

namespace ds {

// A baseline step crashed, hung or broke its contract: a crash of the baseline (exit 4), reported
// under its name, never the candidate's and never a pass. `outputs` are the stages of that step.
struct BaselineCrash : CandidateCrash {
  BaselineCrash(std::string step, std::string why, std::vector<std::string> outs = {})
      : CandidateCrash(std::move(step), std::move(why)), outputs(std::move(outs)) {}
  std::vector<std::string> outputs;
};

// The flags a baseline run cannot take, before anything is made or read: exit 2 naming them.
void check_baseline_usage(const RunOptions& opt);

class Baseline {
 public:
  // Makes `opt.baseline` and gates it for `header` with its own GDN variant: an unknown name, a
  // dump, a candidate that cannot run here is InputError (exit 2); a baseline lacking an op of the
  // stages it computes is GateRefusal (exit 3). Both name --baseline. A partial baseline is not
  // refused: the stages it leaves out are judged `missing`.
  Baseline(const RunOptions& opt, const ModelConfig& header);

  std::string name() const { return cand_->name(); }
  const Candidate& candidate() const { return *cand_; }
  DType storage_dtype() const { return cand_->storage_dtype(); }
  nlohmann::json json() const;
  // Its plan for a block of the run's model, under the baseline's GDN variant.
  std::vector<KernelStep> plan(BlockKind kind) const;

  // Loads it (in a child process when `isolate`); a crash while loading is BaselineCrash.
  void load(const ModelConfig& cfg, const WeightStore& weights, bool isolate, double timeout_s);

  // Resolves one input of a baseline step at the baseline's storage dtype, as isolated mode
  // resolves the candidate's.
  using Resolve = std::function<Tensor(const std::string& step, const std::string& input, DType storage)>;
  // Runs its plan for one block and returns every stage it produced. Its kernel launches are
  // dropped: the profile and the race findings are the candidate's.
  TensorMap run_block(BlockKind kind, int step, int layer, int pos0, int n_tokens, const Resolve& input);

  // What the candidate's stage `key` is held to: the baseline's tensor of it in `base`, as f64 in
  // the reference's shape; or, when the baseline has no tensor of that size for it, the stage's
  // result, `missing` or `shape-mismatch` with a note naming the baseline: never a pass.
  std::variant<Tensor, StageResult> target(const TensorMap& base, StageKey key, Mode mode, DType storage,
                                           const Tensor& ref) const;
  // The stages of the step that crashed, `crashed`, with a note naming the baseline.
  std::vector<StageResult> crashed_stages(const BaselineCrash& crash, int step, int layer, Mode mode,
                                          const TensorMap& ref) const;

 private:
  std::string spec_;
  CandidatePtr cand_;
  ModelConfig cfg_;  // the run's model with the baseline's GDN variant, once loaded
};

}  // namespace ds
