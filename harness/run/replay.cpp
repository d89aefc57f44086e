#include "replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "closest_name.h"
#include "fill_candidate.h"
#include "launch_log.h"
#include "load_model.h"
#include "launch_sinks.h"
#include "registry.h"
#include "runner.h"
#include "stage_catalog.h"
#include "trace_reader.h"

namespace ds {

namespace {

// The group of the case to replay: "/" for a single trace, "/cases/<k>" for case k of a merged
// file, which holds many runs and so needs --case.
std::string case_group(const ReplayRequest& req) {
  const std::vector<trace::TraceCase> cases = trace::list_cases(req.trace);
  const bool merged = cases.size() != 1 || cases.front().group != "/";
  if (req.case_index < 0 && merged)
    throw InputError(
        fmt::format("{}: a merged file of {} case(s): pick the case to replay with --case K (0 to {})",
                    req.trace, cases.size(), int(cases.size()) - 1));
  const std::size_t k = req.case_index < 0 ? 0 : std::size_t(req.case_index);
  if (k >= cases.size())
    throw InputError(fmt::format("--case {}: {} holds {} case(s), numbered 0 to {}", req.case_index,
                                 req.trace, cases.size(), int(cases.size()) - 1));
  const trace::TraceCase& c = cases[k];
  if (c.stopped_early())
    throw InputError(
        fmt::format("{}{}: case {} stopped before any stage ran ({}): there is nothing to replay", req.trace,
                    merged ? fmt::format(" case {}", k) : std::string(), c.key(), c.verdict));
  return c.group;
}

}  // namespace

ReplayResult replay_stage(const ReplayRequest& req, const Policy& policy) {
  std::unique_ptr<trace::TraceReader> t;
  try {
    t = std::make_unique<trace::TraceReader>(req.trace, case_group(req));
  } catch (const trace::TraceError& e) {
    throw InputError(e.what());
  }
  // Where the messages below point: the file, and the case in a merged one.
  const std::string where =
      t->group() == "/" ? req.trace : fmt::format("{} case {}", req.trace, req.case_index);
  const trace::TraceRow* row = nullptr;
  std::vector<std::string> stages;  // the trace's stage names, for a mistyped --stage
  for (const auto& r : t->rows()) {
    if (r.result.key == StageKey{req.step, req.layer, req.stage} && r.result.mode == req.mode) row = &r;
    if (std::find(stages.begin(), stages.end(), r.result.key.stage) == stages.end())
      stages.push_back(r.result.key.stage);
  }
  if (!row)
    throw InputError(fmt::format("{}: no stage {} of layer {} at step {} ({} mode){}", where, req.stage,
                                 req.layer, req.step, mode_name(req.mode), did_you_mean(req.stage, stages)));
  // A batched step's inputs are every sequence's: a batch run stores none (docs/batches.md).
  if (t->run().is_object() && t->run().contains("batch"))
    throw InputError(
        fmt::format("{}: a batch run (run --batch) stores no step inputs, so replay has nothing of it "
                    "to re-run; rerun that sequence as a run of its own",
                    where));
  const auto captured = t->captured_step(req.step, req.layer, req.mode, req.stage);
  if (!captured)
    throw InputError(
        fmt::format("{}: the inputs of {} (layer {}, step {}) were not captured: only failing stages' "
                    "steps are stored (run with --capture inputs to keep every step's)",
                    where, req.stage, req.layer, req.step));
  if (!t->has_tensors(*row))
    throw InputError(
        fmt::format("{}: the reference tensor of {} was not stored (capture mode)", where, req.stage));

  const auto& run = t->run();
  // The spec as the run was given it, unless that was a relative path this directory does not
  // see: then the absolute one the run recorded. --model overrides both.
  std::string spec = req.model;
  if (spec.empty()) {
    spec = run.value("model_spec", std::string());
    if (spec.empty() && run.contains("model") && run["model"].is_object())
      spec = run["model"].value("name", std::string());
    std::error_code ec;
    const std::string abs = run.value("model_path", std::string());
    if (!ref::synthetic_preset(spec) && !std::filesystem::exists(spec, ec) && !abs.empty() &&
        std::filesystem::exists(abs, ec))
      spec = abs;
  }
  Model model = load_model_spec(spec, run.value("seed", std::uint64_t(0)), run.value("layers", 0));
  // A plugin's trace records its file ("spec"); the name alone would not find it again.
  const nlohmann::json& stored = run["candidate"];
  const std::string cand_name =
      !req.candidate.empty() ? req.candidate : stored.value("spec", stored.value("name", std::string()));
  CandidatePtr cand;
  try {
    cand = make_candidate(cand_name);
    // A partial candidate's run: its "fill:" steps replay through the same fill.
    if (stored.value("fill", std::string("none")) == "reference") {
      CandidatePtr fill = make_fill_candidate(cand->storage_dtype());
      cand = std::make_unique<FilledCandidate>(std::move(cand), std::move(fill));
    }
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--candidate: {}", e.what()));
  } catch (const CandidateCrash& e) {
    throw InputError(fmt::format("--candidate {}: crashed while being opened: {}", cand_name, e.what()));
  }
  // In this process on purpose: replay is what a kernel author runs under gdb or ASan.
  const launch_sinks::ScopedOptions simt_options(req.simt);
  cand->load(model.config, model.weights);
  launch_log::take();

  const ModelConfig& cfg = model.config;
  std::vector<BlockKind> kinds;
  if (req.layer == kModelLayer)
    kinds = {BlockKind::embed, BlockKind::head};
  else
    kinds = {cfg.block_kind(req.layer)};
  const KernelStep* ks = nullptr;
  std::vector<KernelStep> plan;
  for (BlockKind k : kinds) {
    plan = cand->plan(cfg, k);
    for (const auto& s : plan)
      if (s.name == captured->kernel_step) ks = &s;
    if (ks) break;
  }
  if (!ks)
    throw InputError(fmt::format("candidate {} has no step '{}' (the trace was made by {})", cand_name,
                                 captured->kernel_step, run["candidate"].value("name", std::string())));
  TensorMap inputs;
  for (const auto& name : ks->inputs) {
    auto it = captured->inputs.find(name);
    inputs[name] = it == captured->inputs.end() ? Tensor{} : it->second;
  }
  TensorMap outputs;
  const StepContext ctx{&cfg, req.step, req.layer, captured->pos0, captured->n_tokens};
  cand->run(*ks, ctx, inputs, outputs);
  std::string race;  // as the runner reports it (--race-check)
  const std::vector<LaunchRecord> launches = launch_log::take();
  for (std::size_t i = 0; i < launches.size() && race.empty(); ++i)
    if (!launches[i].race.empty()) race = launch_log::race_note(i, ks->name, launches[i]);
  auto out = outputs.find(req.stage);
  if (out == outputs.end())
    throw InputError(fmt::format("step '{}' of {} did not produce {}", ks->name, cand_name, req.stage));

  ReplayResult res;
  res.kernel_step = ks->name;
  res.stored = row->result;
  StageResult& r = res.replayed;
  r.key = row->result.key;
  r.mode = req.mode;
  r.cand_dtype = cand->storage_dtype();
  r.shape = row->result.shape;
  r.floor_max_abs = row->result.floor_max_abs;
  r.floor_rms = row->result.floor_rms;
  r.floor_mean_abs = row->result.floor_mean_abs;
  const Tensor ref = t->ref_tensor(*row);
  if (out->second.numel() != ref.numel()) {
    r.status = Status::shape_mismatch;
    r.note = fmt::format("candidate shape {} vs reference {}", shape_str(out->second.shape()),
                         shape_str(ref.shape()));
  } else {
    const Tensor c = out->second.reshaped(ref.shape());
    r.m.ref_rms = row->result.m.ref_rms;
    r.m = compute_metrics(ref.view(), c.view(), r.cand_dtype, policy.tolerance(r));
    r.cand_hash = content_hash(c);
    // The statistic needs the floor run, which a trace does not store: it carries over only to an
    // output identical to the stored one.
    if (r.cand_hash == res.stored.cand_hash) {
      r.bias_slope = res.stored.bias_slope;
      r.bias_se = res.stored.bias_se;
    }
  }
  policy.judge(r);
  if (!race.empty()) {
    r.status = Status::race;
    r.note = race;
  }
  res.reproduces =
      r.status == res.stored.status && r.m.mismatches == res.stored.m.mismatches &&
      (r.m.max_abs == res.stored.m.max_abs || (std::isnan(r.m.max_abs) && std::isnan(res.stored.m.max_abs)));
  return res;
}

}  // namespace ds
