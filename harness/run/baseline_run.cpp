#include "baseline_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "child_candidate.h"
#include "gate.h"
#include "launch_log.h"
#include "registry.h"
#include "runner.h"

namespace ds {

namespace {

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

void check_baseline_usage(const RunOptions& opt) {
  if (opt.baseline.empty()) {
    if (!opt.baseline_gdn_variant.empty())
      throw InputError(
          "--baseline-gdn-variant: names the GDN variant of a baseline, but no --baseline is given");
    return;
  }
  // Chained mode would need a second chain, fed the baseline's own outputs: not what a baseline
  // compares (two kernels on one input), so it is refused rather than half-done.
  if (opt.modes_given && std::find(opt.modes.begin(), opt.modes.end(), Mode::chained) != opt.modes.end())
    throw InputError(fmt::format(
        "--mode {}: --baseline {} judges isolated mode only (both candidates are handed the oracle's inputs, "
        "so a difference is the kernels', not an accumulated drift); drop --mode or use --mode isolated",
        opt.modes.size() > 1 ? "both" : "chained", opt.baseline));
  if (starts_with(opt.baseline, "dump:"))
    throw InputError(fmt::format(
        "--baseline {}: a dump is a recording of an engine that fed itself; it cannot be handed the inputs "
        "the candidate gets. Judge it as a --candidate instead",
        opt.baseline));
  if (starts_with(opt.candidate, "dump:"))
    throw InputError(fmt::format(
        "--baseline {}: the candidate {} is a recording that runs chained only, and --baseline judges "
        "isolated mode only",
        opt.baseline, opt.candidate));
}

Baseline::Baseline(const RunOptions& opt, const ModelConfig& header) : spec_(opt.baseline) {
  ModelConfig cfg = header;
  try {
    cfg.gdn_fused = gdn_variant_ops(opt.baseline_gdn_variant);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--baseline-{}", std::string(e.what()).substr(2)));
  }
  cfg_ = cfg;
  try {
    cand_ = make_candidate(spec_);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--baseline: {}", e.what()));
  }
  try {
    GateAnswer g = gate_candidate(cfg, *cand_, false);
    if (g.unavailable) throw InputError(fmt::format("--baseline {}: {}", spec_, g.refusal));
    // A partial baseline is asked only for the ops of its own stages: the stages it leaves out are
    // judged `missing`, which fails the run, so nothing is filled in for it.
    if (!g.pass && !g.coverage.complete()) g = gate_candidate(cfg, *cand_, true);
    const bool refused = !g.pass && (!g.missing.empty() || g.coverage.produced.empty());
    if (refused)
      throw GateRefusal(fmt::format("--baseline {}: {}", spec_, g.refusal),
                        g.missing.empty() ? std::string() : g.missing.str());
  } catch (const PlanError& e) {
    throw InputError(fmt::format("--baseline {}: {}", spec_, e.what()));
  } catch (const CandidateCrash& e) {
    throw BaselineCrash(e.step_name, fmt::format("crashed while being opened: {}", e.what()));
  }
}

nlohmann::json Baseline::json() const {
  return {{"name", cand_->name()},
          {"spec", spec_},
          {"description", cand_->description()},
          {"storage_dtype", dtype_name(cand_->storage_dtype())},
          {"capabilities", cand_->capabilities().str()},
          {"gdn_fused", cfg_.gdn_fused.str()}};
}

std::vector<KernelStep> Baseline::plan(BlockKind kind) const { return cand_->plan(cfg_, kind); }

void Baseline::load(const ModelConfig& cfg, const WeightStore& weights, bool isolate, double timeout_s) {
  const OpSet fused = cfg_.gdn_fused;
  cfg_ = cfg;
  cfg_.gdn_fused = fused;
  if (isolate) cand_ = std::make_unique<ChildCandidate>(std::move(cand_), timeout_s);
  try {
    cand_->load(cfg_, weights);
    launch_log::take();
  } catch (const CandidateCrash& crash) {
    throw BaselineCrash("load", crash.what());
  } catch (const std::exception& e) {
    throw InputError(fmt::format("--baseline {} could not load: {}", cand_->name(), e.what()));
  }
}

TensorMap Baseline::run_block(BlockKind kind, int step, int layer, int pos0, int n_tokens,
                              const Resolve& input) {
  TensorMap produced;
  const StepContext ctx{&cfg_, step, layer, pos0, n_tokens};
  for (const KernelStep& ks : plan(kind)) {
    TensorMap outs;
    try {
      TensorMap inputs;
      for (const std::string& name : ks.inputs) inputs[name] = input(ks.name, name, cand_->storage_dtype());
      cand_->run(ks, ctx, inputs, outs);
    } catch (const CandidateCrash& crash) {
      launch_log::take();
      throw BaselineCrash(ks.name, crash.what(), ks.outputs);
    } catch (const std::exception& e) {
      // In this process (--no-isolate) a kernel error arrives as a plain exception.
      launch_log::take();
      throw BaselineCrash(ks.name, fmt::format("threw: {}", e.what()), ks.outputs);
    }
    launch_log::take();
    for (const std::string& o : ks.outputs) {
      auto it = outs.find(o);
      if (it == outs.end())
        throw BaselineCrash(ks.name, fmt::format("declared '{}' as an output but did not produce it", o),
                            ks.outputs);
      produced[o] = std::move(it->second);
    }
  }
  return produced;
}

std::variant<Tensor, StageResult> Baseline::target(const TensorMap& base, StageKey key, Mode mode,
                                                   DType storage, const Tensor& ref) const {
  auto b = base.find(key.stage);
  if (b != base.end() && b->second.numel() == ref.numel())
    return b->second.to(DType::f64).reshaped(ref.shape());
  StageResult r;
  r.key = std::move(key);
  r.mode = mode;
  r.cand_dtype = storage;
  r.shape = ref.shape();
  if (b == base.end()) {
    r.status = Status::missing;
    r.note = fmt::format("the baseline {} produced no tensor for this stage (its plan lacks it)", name());
  } else {
    r.status = Status::shape_mismatch;
    r.note = fmt::format("baseline {} shape {} vs the reference's {}", name(), shape_str(b->second.shape()),
                         shape_str(ref.shape()));
  }
  return r;
}

std::vector<StageResult> Baseline::crashed_stages(const BaselineCrash& crash, int step, int layer, Mode mode,
                                                  const TensorMap& ref) const {
  std::vector<StageResult> out;
  for (const std::string& o : crash.outputs) {
    StageResult& r = out.emplace_back();
    r.key = {step, layer, o};
    r.mode = mode;
    r.status = Status::crashed;
    r.cand_dtype = storage_dtype();
    r.note = fmt::format("baseline {}: {}: {}", name(), crash.step_name, crash.what());
    if (auto it = ref.find(o); it != ref.end()) r.shape = it->second.shape();
  }
  return out;
}

}  // namespace ds
