// The features a run may carry, each one component that plugs into the phases it changes
// (docs/ARCHITECTURE.md, "The run, phase by phase"). A phase calls a feature's hook whether or
// not the run asked for the feature; one not asked for does nothing there, so the branch on
// each flag lives in its component, not in every phase.
//
//   feature                          settle  gate  load  step loop
//   LateStart       --from-step        x                    x
//   ProbeFeature    --probe            x       x     x
//   DumpFeature     dump:DIR           x       x     x      x
//   FillFeature     --fill reference           x            x
//   BaselineFeature --baseline         x       x     x      x
//   BatchFeature    --batch            x             x      x
//
// In the step loop the stages are held to a Yardstick: the oracle's (the reference's stages and
// the noise floor) or, with --baseline, the baseline's own run of each block.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baseline_run.h"
#include "batch_checks.h"
#include "batch_feature.h"
#include "candidate.h"
#include "memory_estimate.h"
#include "model.h"
#include "plan_check.h"
#include "result.h"
#include "run_options.h"

namespace ds {

struct RunState;

// A finding of a stage's launches that overrides its values' verdict: `race` (--race-check,
// --simt-racecheck) or `memory` (--simt-memcheck), and why.
struct LaunchFinding {
  Status status;
  std::string note;
  // A note the stage carries without its status changing (a benign hazard of its launch).
  bool note_only = false;
};
// This block's stages with a launch finding: stage -> finding.
using LaunchFindings = std::map<std::string, LaunchFinding, std::less<>>;

// --from-step N: the reference runs every step; the candidate runs and is judged from step N on.
struct LateStart {
  // settle: a start past the last step, or with a chained lane (the candidate's own chain would
  // need its own outputs of the steps before), is bad input.
  static void check(const RunOptions& opt);
  // step loop: whether the candidate runs (and is judged) at `step`.
  static bool judged(const RunOptions& opt, int step) { return step >= opt.from_step; }
};

// --probe NAME: an input pattern that exposes one class of kernel bug (probes.h).
struct ProbeFeature {
  // settle: the probe's prompt, steps and modes, before the gates read them.
  static void settle(ModelConfig& header, RunOptions& opt);
  // gate: why the run has nothing to judge (probes.h: probe_skip_reason); nothing when it has.
  static std::optional<std::string> skip_reason(const ModelConfig& header, const RunOptions& opt);
  // load: the probe's rewrite of the weights both sides run on, noted in the report.
  static void rewrite_weights(RunState& s, Model& m);
};

// A dump candidate (dump:DIR, dump_run.h): an engine's recorded tensors, not code that runs.
struct DumpFeature {
  // settle: the dump's mapping settled, its own tokens as the prompt (they win over --tokens,
  // `source` names them), its modes (chained only); a probe refused.
  static void settle_prompt(RunState& s, const ModelConfig& header, const Candidate& cand,
                            std::string& source);
  // settle: the numerics its mapping declares, into `spec` and `from` when --numerics is not given.
  static void declared_numerics(const Candidate& cand, std::string& spec, std::string& from);
  // gate, first: with --fill reference, a mapped stage whose file (or tensor) the dump lacks is
  // unmapped, so the fill computes it (recorded `filled`) and a note says so. Without the flag the
  // preflight names the first such file and its stage, and offers the flag.
  static void fill_missing_sources(RunState& s, const Candidate& cand, const ModelConfig& header);
  // gate: every file checked before any compute.
  static void preflight(const Candidate& cand, const ModelConfig& header, const RunOptions& opt);
  // load: whether the candidate runs code (and so may run in a child process); a dump, read in
  // this process, makes a bad file exit 2, not a crash.
  static bool runs_code(const Candidate& cand);
  // step loop: a dump without embed (judged missing) still has layers to judge; they read no
  // input, so the reference's embed at the storage dtype stands in for the lane's.
  static void stand_in_embed(const Candidate& cand, TensorMap& outs, const Tensor& ref_embed);
};

// The reference fill: what completes a candidate that leaves stages out (--fill reference, or a
// dump's stages its mapping declares absent).
struct FillFeature {
  // gate: whether the coverage gate lets absent stages through (filled, or a dump's `missing`).
  static bool completes(const RunOptions& opt, const Candidate& cand);
  // gate: `cand` completed by the fill where the run asks for it.
  static CandidatePtr complete(CandidatePtr cand, const ModelConfig& header, const RunOptions& opt,
                               const Coverage& coverage);
  // step loop: whether the stages of `step` came from the fill: recorded `filled`, never judged.
  static bool fills(const KernelStep& step) { return is_fill_step(step); }
};

// One block the candidate just ran, as a yardstick needs it.
struct BlockRun {
  BlockKind kind;
  int step, layer, pos0, n_tokens;
  Mode mode;
  const TensorMap& ref;  // the reference's stages of this block
};

// One stage to judge.
struct StageCall {
  int step, layer;
  std::string_view stage;
  Mode mode;
  DType storage;
  const Tensor& ref;    // the reference's tensor
  const Tensor* cand;   // the candidate's, null when it produced none
  const Tensor* floor;  // the noise floor's, null when it has none
  int seq = 0;          // the sequence (a batch run judges each apart)
  // What the batch checks found at this stage of this sequence (batch_checks.h); null: nothing.
  const BatchFinding* batch_finding = nullptr;
  // The local check (a chained lane that runs one): the stage as two honest engines of the
  // candidate's numerics compute it from the candidate's own inputs (f32 sums forward, reversed).
  const Tensor* honest = nullptr;
  const Tensor* honest_alt = nullptr;
};

// What the stages of a block are held to (step loop).
class Yardstick {
 public:
  virtual ~Yardstick() = default;
  // After the candidate ran a block: what the yardstick computes of it, on the same inputs.
  virtual void block_ran(RunState& s, const BlockRun& b, const Baseline::Resolve& input) = 0;
  // Judges one stage (or records why it cannot be).
  virtual void judge(RunState& s, const LaunchFindings& findings, const StageCall& c) = 0;
  // The logits the candidate's are held to, from the reference's head block; null: none.
  virtual const Tensor* logits(const TensorMap& ref_head) const = 0;
};

// The default: the reference's stages, with the noise floor.
class OracleYardstick final : public Yardstick {
 public:
  void block_ran(RunState&, const BlockRun&, const Baseline::Resolve&) override {}
  void judge(RunState& s, const LaunchFindings& findings, const StageCall& c) override;
  const Tensor* logits(const TensorMap& ref_head) const override;
};

// --baseline B (baseline_run.h): the candidate judged against B's run of every block on the
// inputs the candidate got, with no noise floor (two kernels on one input, not a rounding model).
class BaselineFeature final : public Yardstick {
 public:
  // settle: the flags a baseline run cannot take, before anything is made or read.
  static void check_usage(const RunOptions& opt);
  // gate: B made and gated for `header`.
  void make(const RunOptions& opt, const ModelConfig& header);
  bool active() const { return baseline_.has_value(); }
  // gate: B's memory, for the estimate.
  std::optional<CandidateMemory> memory() const;
  // load: B loaded; the crash it reports, or "" when it loaded (or there is no B).
  std::string load(const ModelConfig& cfg, const WeightStore& weights, const RunOptions& opt);
  // load: B's plan for a block (empty without B), for the stages read as cache:.
  std::vector<KernelStep> plan(BlockKind kind) const;
  // The name the report and crashes give B ("" without B; `opt.baseline` before it is made).
  std::string name() const;
  std::string name(const RunOptions& opt) const { return active() ? name() : opt.baseline; }
  // load (and a stopped run's trace): B in the trace's run attributes (null without B).
  nlohmann::json json() const;

  void block_ran(RunState& s, const BlockRun& b, const Baseline::Resolve& input) override;
  void judge(RunState& s, const LaunchFindings& findings, const StageCall& c) override;
  const Tensor* logits(const TensorMap& ref_head) const override;

 private:
  std::optional<Baseline> baseline_;
  TensorMap block_;   // B's stages of the block just run
  TensorMap logits_;  // B's head block, this step
};

struct RunFeatures {
  BaselineFeature baseline;
  BatchFeature batch;  // --batch (batch_feature.h)
  OracleYardstick oracle;
  Yardstick& yardstick() { return baseline.active() ? static_cast<Yardstick&>(baseline) : oracle; }
};

// A memory estimate's view of a candidate (memory_estimate.h).
CandidateMemory candidate_memory(const Candidate& cand);

}  // namespace ds
