// Phase 3, load (phases.h): the weights read once, the oracle built (refusing a model that
// lacks a required tensor), the trace opened, the candidate and the baseline loaded, one lane
// with its noise floor per mode.
#include <fmt/format.h>

#include <set>

#include "child_candidate.h"
#include "launch_log.h"
#include "load_model.h"
#include "phases.h"
#include "prompt.h"
#include "sandbox.h"

namespace ds {

namespace {

// Only stages some step reads as "cache:<stage>" keep a growing history (the KV cache).
template <typename PlanOf>
void note_cached(const ModelConfig& cfg, const PlanOf& plan_of, std::set<std::string, std::less<>>& cached) {
  const auto note = [&](BlockKind kind) {
    for (const KernelStep& ks : plan_of(kind))
      for (const std::string& in : ks.inputs)
        if (in.rfind("cache:", 0) == 0) cached.insert(in.substr(6));
  };
  for (BlockKind k : {BlockKind::embed, BlockKind::head}) note(k);
  for (int l = 0; l < cfg.n_layers; ++l) note(cfg.block_kind(l));
}

}  // namespace

Loaded load_phase(RunState& s, const ModelConfig& header, CandidatePtr cand) {
  const RunOptions& opt = s.opt;
  s.event("load_weights");
  Loaded run;
  // One copy of the weights, in their stored dtype, shared by the oracle, the noise floors and
  // the candidate's load (a child process sees the same pages through fork).
  run.model = std::make_shared<const Model>([&] {
    Model m = load_model_spec(opt.model, opt.seed, opt.layers);
    m.config.gdn_fused = header.gdn_fused;
    ProbeFeature::rewrite_weights(s, m);
    return m;
  }());
  const ModelConfig& cfg = run.model->config;
  s.report.model = cfg.name;
  s.report.policy = s.policy.name();
  s.report.candidate = cand->name();
  s.report.baseline = s.features.baseline.name();
  if (opt.isolate_process && DumpFeature::runs_code(*cand))
    cand = std::make_unique<ChildCandidate>(std::move(cand), opt.timeout_s);
  // Weight completeness (and shapes): refuse a model lacking a required role before any
  // matrix multiply, naming the tensor.
  try {
    run.oracle = std::make_unique<ref::Reference>(run.model);
  } catch (const ref::ModelError& e) {
    throw InputError(fmt::format("weight-completeness gate: {}", e.what()),
                     fmt::format("weight-completeness gate: {}", e.full()));
  }
  s.features.batch.note_candidate(s, cfg, *cand);
  if (!opt.trace_path.empty()) s.open_trace(cfg);
  s.event("candidate_load");
  launch_log::set_live_allocations({});  // a block an earlier run of this process left is not this run's
  if (const std::string why = launch_sinks::racecheck_unsupported(); opt.simt.racecheck && !why.empty())
    throw InputError(fmt::format("--simt-racecheck: {}", why));
  s.simt_options.emplace(opt.simt);  // before load: a child process and a plugin take them from here
  if (opt.sandbox && !sandbox::configured())
    s.report.notes.push_back(
        fmt::format("sandbox: none: {} is Driftscope's own code (a kernel module it needs may be "
                    "built on first use); --sandbox confines plugins, bare .cu files and "
                    "Python candidates",
                    opt.candidate));
  if (const auto& box = sandbox::configured())
    s.report.notes.push_back(
        fmt::format("sandbox: the candidate's processes run with {} (under {}; docs/sandbox.md)",
                    sandbox::kSummary, box->writable_dir));
  // Every child that entered the sandbox says what it could not set up: each once, loaded or not.
  auto note_sandbox_gaps = [&s] {
    const std::string missing = sandbox::missing();
    std::set<std::string> said;
    for (std::size_t at = 0, end; at < missing.size(); at = end + 1) {
      end = std::min(missing.find('\n', at), missing.size());
      const std::string line = missing.substr(at, end - at);
      if (!line.empty() && said.insert(line).second)
        s.report.notes.push_back("sandbox: not applied: " + line);
    }
  };
  try {
    cand->load(cfg, run.model->weights);
    launch_log::take();  // what load() launched (weight repacking, say) belongs to no step
    note_sandbox_gaps();
  } catch (const CandidateCrash& crash) {
    note_sandbox_gaps();
    s.crash = fmt::format("candidate crashed while loading: {}", crash.what());
    run.cand = std::move(cand);
    return run;
  } catch (const std::exception& e) {
    // E.g. the cuda candidate without a device: a clear error (exit 2), not a terminate.
    throw InputError(fmt::format("candidate {} could not load: {}", cand->name(), e.what()));
  }
  s.crash = s.features.baseline.load(cfg, run.model->weights, opt);
  if (!s.crash.empty()) {
    run.cand = std::move(cand);
    return run;
  }

  note_cached(
      cfg, [&](BlockKind k) { return cand->plan(cfg, k); }, run.cached);
  note_cached(
      cfg, [&](BlockKind k) { return s.features.baseline.plan(k); }, run.cached);
  for (Mode m : opt.modes) {
    run.lanes.push_back(Lane{m, {}, {}, {}, {}, {}, {}});
    run.lanes.back().floor = std::make_unique<ref::Reference>(
        run.model, ref::ReferenceOptions{.storage = cand->storage_dtype(), .numerics = s.numerics});
    if (m == Mode::chained && local_check_runs(opt, !DumpFeature::runs_code(*cand))) {
      HonestEngines& h = run.lanes.back().honest;
      h.f32_sums = std::make_unique<ref::Reference>(
          run.model, ref::ReferenceOptions{.storage = cand->storage_dtype(), .numerics = s.numerics});
      h.exact_sums = std::make_unique<ref::Reference>(
          run.model,
          ref::ReferenceOptions{.storage = cand->storage_dtype(), .numerics = with_exact_sums(s.numerics)});
    }
  }
  run.tokens = s.prompt.empty()
                   ? seeded_prompt(opt.prompt_tokens, cfg.vocab, opt.seed, seeded_prompt_start(opt.model))
                   : s.prompt;
  s.report.tokens = run.tokens;
  s.report.modes = opt.modes;
  run.cand = std::move(cand);
  run.loaded = true;
  return run;
}

}  // namespace ds
