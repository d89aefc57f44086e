#include "runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include <map>
#include <set>
#include <tuple>
#include <memory>
#include <utility>
#include <variant>

#include "baseline_run.h"
#include "bias.h"
#include "bisect.h"
#include "build_info.h"
#include "child_candidate.h"
#include "dump_run.h"
#include "fill_candidate.h"
#include "gate.h"
#include "launch_sinks.h"
#include "plan_check.h"
#include "logits.h"
#include "probes.h"
#include "prompt.h"
#include "metrics.h"
#include "reference.h"
#include "registry.h"
#include "run_json.h"
#include "stage_catalog.h"
#include "contracts.h"
#include "cpu/cpu_candidate.h"
#ifdef DRIFTSCOPE_HAVE_SIMT_KERNELS
#include "gpu/gpu_candidate.h"
#endif
#include "load_model.h"
#include "memory_estimate.h"
#include "selector_check.h"
#include "trace_stub.h"
#include "trace_writer.h"

namespace ds {

ModelConfig load_config_spec(const std::string& spec, int layers) {
  try {
    return ref::load_config(spec, layers);
  } catch (const ref::ModelError& e) {
    throw InputError(fmt::format("--model: {}", e.what()));
  }
}

std::string_view exit_word(int exit_code) {
  switch (exit_code) {
    case kExitParity: return "PASS";
    case kExitFailure: return "FAIL";
    case kExitUsage: return "BAD-INPUT";
    case kExitRefused: return "REFUSED";
    case kExitCrashed: return "CRASHED";
    default: return "?";
  }
}

RunReport stopped_report(std::string model, std::string candidate, std::string policy, int exit_code,
                         std::string_view reason) {
  RunReport r;
  r.model = std::move(model);
  r.candidate = std::move(candidate);
  r.policy = std::move(policy);
  r.exit_code = exit_code;
  r.verdict = std::string(reason.substr(0, reason.find('\n')));
  r.stop_reason = std::string(reason);
  return r;
}

Model load_model_spec(const std::string& spec, std::uint64_t seed, int layers) {
  try {
    return ref::load_model(spec, seed, layers);
  } catch (const ref::ModelError& e) {
    throw InputError(fmt::format("--model: {}", e.what()));
  }
}

OpSet gdn_variant_ops(std::string_view spec) {
  OpSet ops;
  std::size_t at = 0;
  while (at <= spec.size() && !spec.empty()) {
    const std::size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string_view v = spec.substr(at, comma - at);
    if (v == "inplace")
      ops.add(Op::GdnInplace);
    else if (v == "ids")
      ops.add(Op::GdnInplaceIds);
    else if (v == "conv-update")
      ops.add(Op::SsmConvUpdate);
    else if (v == "conv-update-ids")
      ops.add(Op::SsmConvUpdateIds);
    else if (v != "plain")
      throw InputError(
          fmt::format("--gdn-variant: unknown variant '{}' (plain, inplace, ids, conv-update, "
                      "conv-update-ids; comma-separated)",
                      v));
    at = comma + 1;
  }
  return ops;
}

namespace {

// What one mode of the candidate has produced so far: this layer's stages, and every
// layer's stage history across model steps (for cache: and prev: inputs).
struct Lane {
  Mode mode;
  Tensor x;                                              // current layer input
  std::map<std::pair<int, std::string>, Tensor> cache;   // (layer, stage) -> rows so far
  std::map<std::pair<int, std::string>, Tensor> prev;    // (layer, stage) -> previous step
  std::map<std::pair<int, std::string>, Tensor> latest;  // (layer, stage) -> this step
  // The noise floor: the reference at the candidate's storage dtype, fed like the candidate
  // (the oracle's inputs in isolated mode, its own outputs in chained mode).
  std::unique_ptr<ref::Reference> floor;
  Tensor floor_x;
};

std::vector<double> head_values(const Tensor& t, std::int64_t from, int n) {
  std::vector<double> v;
  for (std::int64_t i = from; i < t.numel() && i < from + n; ++i) v.push_back(t.at(i));
  return v;
}

class Run {
 public:
  Run(const RunOptions& opt, const Policy& policy) : opt_(opt), policy_(policy) {}

  RunReport go() {
    check_baseline_usage(opt_);
    ModelConfig header = load_config_spec(opt_.model, opt_.layers);
    if (!opt_.probe.empty()) apply_probe_options(find_probe(opt_.probe), header, opt_);
    check_bounds(header);
    check_selectors(opt_, header, policy_);
    header.gdn_fused = gdn_variant_ops(opt_.gdn_variant);
    header_ = header;
    CandidatePtr cand;
    try {
      cand = make_candidate(opt_.candidate);
      origin_ = plugin_origin(*cand);
      candidate_ = candidate_json(opt_, *cand, origin_);
      settle_prompt(header, *cand);
      settle_numerics(*cand);
      report_.prompt_tokens = opt_.prompt_tokens;
      report_.decode_steps = opt_.decode_steps;
      report_.from_step = opt_.from_step;
      report_.probe = opt_.probe;
      CandidateMemory memory = candidate_memory(*cand);
      // Gates: from the model's header and the candidate's plans alone, before any weight is read.
      event("gate");
      gate(header, cand);
      if (!opt_.baseline.empty()) baseline_.emplace(opt_, header);
      if (const auto* d = as_dump(*cand)) d->preflight(header, step_sizes());
      memory.fill = dynamic_cast<const FilledCandidate*>(cand.get()) != nullptr;
      check_memory(header, memory);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--candidate: {}", e.what()));
    } catch (const CandidateCrash& crash) {
      // A plugin that crashed or hung while being opened or asked for its plans: exit 4, and the
      // trace says so.
      if (!opt_.trace_path.empty()) open_trace(header);
      crash_ = fmt::format("{} crashed while being opened ({}): {}", crasher(crash), crash.step_name,
                           crash.what());
      report_.model = header.name;
      report_.policy = policy_.name();
      report_.candidate = opt_.candidate;
      report_.baseline = opt_.baseline;
      finish();
      return std::move(report_);
    }
    event("load_weights");
    // One copy of the weights, in their stored dtype, shared by the oracle, the noise floors and
    // the candidate's load (a child process sees the same pages through fork).
    const auto model = std::make_shared<const Model>([&] {
      Model m = load_model_spec(opt_.model, opt_.seed, opt_.layers);
      m.config.gdn_fused = header.gdn_fused;
      if (!opt_.probe.empty()) {
        // Both sides run the rewritten weights; the prompt is settled here so the rows it reads are known.
        if (prompt_.empty())
          prompt_ =
              seeded_prompt(opt_.prompt_tokens, m.config.vocab, opt_.seed, seeded_prompt_start(opt_.model));
        report_.probe_note = apply_probe_weights(find_probe(opt_.probe), m.config, m.weights, prompt_);
      }
      return m;
    }());
    const ModelConfig& cfg = model->config;
    report_.model = cfg.name;
    report_.policy = policy_.name();
    report_.candidate = cand->name();
    if (baseline_) report_.baseline = baseline_->name();
    // A dump runs no code of its own: read in this process, a bad file is exit 2, not a crash.
    if (opt_.isolate_process && !as_dump(*cand))
      cand = std::make_unique<ChildCandidate>(std::move(cand), opt_.timeout_s);
    // Weight completeness (and shapes): refuse a model lacking a required role before any
    // matrix multiply, naming the tensor.
    std::unique_ptr<ref::Reference> oracle;
    try {
      oracle = std::make_unique<ref::Reference>(model);
    } catch (const ref::ModelError& e) {
      throw InputError(fmt::format("weight-completeness gate: {}", e.what()),
                       fmt::format("weight-completeness gate: {}", e.full()));
    }
    ref::Reference& reference = *oracle;
    if (!opt_.trace_path.empty()) open_trace(cfg);
    event("candidate_load");
    if (const std::string why = launch_sinks::racecheck_unsupported(); opt_.simt.racecheck && !why.empty())
      throw InputError(fmt::format("--simt-racecheck: {}", why));
    simt_options_.emplace(opt_.simt);  // before load: a child process and a plugin take them from here
    try {
      cand->load(cfg, model->weights);
      launch_log::take();  // what load() launched (weight repacking, say) belongs to no step
    } catch (const CandidateCrash& crash) {
      crash_ = fmt::format("candidate crashed while loading: {}", crash.what());
      finish();
      return std::move(report_);
    } catch (const std::exception& e) {
      // E.g. the cuda candidate without a device: a clear error (exit 2), not a terminate.
      throw InputError(fmt::format("candidate {} could not load: {}", cand->name(), e.what()));
    }
    if (baseline_) try {
        baseline_->load(cfg, model->weights, opt_.isolate_process, opt_.timeout_s);
      } catch (const BaselineCrash& crash) {
        crash_ = fmt::format("baseline {} crashed while loading: {}", baseline_->name(), crash.what());
        finish();
        return std::move(report_);
      }

    // Only stages some step reads as "cache:<stage>" keep a growing history (the KV cache).
    for (BlockKind k : {BlockKind::embed, BlockKind::head})
      for (const KernelStep& ks : cand->plan(cfg, k)) note_cached(ks);
    for (int l = 0; l < cfg.n_layers; ++l)
      for (const KernelStep& ks : cand->plan(cfg, cfg.block_kind(l))) note_cached(ks);
    if (baseline_) {
      for (BlockKind k : {BlockKind::embed, BlockKind::head})
        for (const KernelStep& ks : baseline_->plan(k)) note_cached(ks);
      for (int l = 0; l < cfg.n_layers; ++l)
        for (const KernelStep& ks : baseline_->plan(cfg.block_kind(l))) note_cached(ks);
    }
    std::vector<Lane> lanes;
    for (Mode m : opt_.modes) {
      lanes.push_back(Lane{m, {}, {}, {}, {}, {}, {}});
      lanes.back().floor = std::make_unique<ref::Reference>(
          model, ref::ReferenceOptions{.storage = cand->storage_dtype(), .numerics = numerics_});
    }
    std::vector<int> tokens = prompt_.empty() ? seeded_prompt(opt_.prompt_tokens, cfg.vocab, opt_.seed,
                                                              seeded_prompt_start(opt_.model))
                                              : prompt_;
    report_.tokens = tokens;
    report_.modes = opt_.modes;
    try {
      run_steps(*cand, cfg, reference, lanes, tokens);
    } catch (const CandidateCrash& crash) {
      flush();
      crash_ = fmt::format("{} crashed in step '{}': {}", crasher(crash), crash.step_name, crash.what());
    } catch (const dump::DumpError& e) {
      flush();
      throw InputError(e.what());
    }
    finish();
    return std::move(report_);
  }

 private:
  // A run asking for more than the model has is bad input, not silently a smaller run.
  void check_bounds(const ModelConfig& header) const {
    if (opt_.layers > 0) {
      const ModelConfig full = load_config_spec(opt_.model, 0);
      if (opt_.layers > full.n_layers)
        throw InputError(
            fmt::format("--layers {}: {} has only {} layer(s)", opt_.layers, full.name, full.n_layers));
    }
    const long positions = long(opt_.prompt_tokens) + opt_.decode_steps;
    if (header.max_positions > 0 && positions > header.max_positions)
      throw InputError(fmt::format(
          "--prompt-tokens {} + --decode-steps {} = {} positions: past {}'s context of {} positions",
          opt_.prompt_tokens, opt_.decode_steps, positions, header.name, header.max_positions));
  }

  // The candidate's own chain cannot start at a later step: it would need its own earlier outputs.
  void check_from_step() const {
    if (opt_.from_step == 0) return;
    if (opt_.from_step < 0 || opt_.from_step > opt_.decode_steps)
      throw InputError(fmt::format("--from-step {}: must be between 0 and --decode-steps ({})",
                                   opt_.from_step, opt_.decode_steps));
    if (std::find(opt_.modes.begin(), opt_.modes.end(), Mode::chained) != opt_.modes.end())
      throw InputError(fmt::format(
          "--from-step {} needs --mode isolated: the chained lane feeds the candidate its own outputs of the "
          "steps before, which it would not have run",
          opt_.from_step));
  }

  static CandidateMemory candidate_memory(const Candidate& cand) {
    CandidateMemory m;
    m.name = cand.name();
    m.storage = cand.storage_dtype();
    m.dump = as_dump(cand) != nullptr;
    m.on_device = m.name.rfind("cuda", 0) == 0;
    m.f32_copy = dynamic_cast<const cpu::CpuCandidate*>(&cand) != nullptr;
#ifdef DRIFTSCOPE_HAVE_SIMT_KERNELS
    if (const auto* g = dynamic_cast<const gpu::GpuCandidate*>(&cand); g && g->reads_weights_in_place()) {
      m.in_place = true;
      m.copied_roles = gpu::GpuCandidate::packed_roles;
    }
#endif
    return m;
  }

  // The memory budget, before any weight is read: a run the machine cannot hold is bad input
  // (exit 2) now, not an OOM kill of the harness and its child half-way through loading.
  void check_memory(const ModelConfig& header, const CandidateMemory& cand) {
    const ModelConfig full = opt_.layers > 0 ? load_config_spec(opt_.model, 0) : header;
    const std::optional<CandidateMemory> base =
        baseline_ ? std::optional(candidate_memory(baseline_->candidate())) : std::nullopt;
    const MemoryEstimate e =
        estimate_memory(header, held_bytes_per_weight(opt_.model, full), opt_, cand, base ? &*base : nullptr);
    report_.memory = e.str();
    const std::optional<std::uint64_t> available = available_memory();
    const std::optional<std::uint64_t> budget = opt_.max_memory ? opt_.max_memory : available;
    if (!budget || e.total() <= *budget) return;
    throw InputError(fmt::format(
        "memory budget: this run needs an estimated {}, over the budget of {} ({}); refused before loading "
        "any weight. Run fewer --layers, or raise --max-memory",
        e.str(), format_bytes(*budget),
        opt_.max_memory ? fmt::format("--max-memory {}", opt_.max_memory_text)
                        : std::string("MemAvailable of /proc/meminfo")));
  }

  // The floors model how the candidate computes: --numerics, else its dump mapping's `numerics:`,
  // else the default of its storage dtype. A declared one is named in the report's notes.
  void settle_numerics(const Candidate& cand) {
    std::string spec = opt_.numerics, from = "--numerics";
    if (const auto* d = as_dump(cand); spec.empty() && d && !d->mapping().numerics.empty()) {
      spec = d->mapping().numerics;
      from = fmt::format("{}: numerics", d->mapping().path);
    }
    try {
      numerics_ = spec.empty() ? default_numerics(cand.storage_dtype()) : parse_numerics(spec);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("{}: {}", from, e.what()));
    }
    opt_.numerics = report_.numerics = numerics_str(numerics_);
    if (!spec.empty())
      report_.notes.push_back(fmt::format("noise floors model {} numerics ({}, from {})", spec, report_.numerics,
                                          from));
  }

  // The prompt when it is given rather than seeded: a dump's own tokens win over --tokens. A dump
  // also settles the modes (chained only).
  void settle_prompt(const ModelConfig& header, const Candidate& cand) {
    std::string source = "--tokens";
    prompt_ = opt_.tokens;
    if (const auto* d = as_dump(cand)) {
      try {
        if (std::string chose = d->settle(header); !chose.empty()) report_.notes.push_back(std::move(chose));
      } catch (const dump::DumpError& e) {
        throw InputError(e.what());
      }
      if (!opt_.probe.empty())
        throw InputError(
            fmt::format("--probe {}: {} replays an engine's own prompt and weights; a probe needs a "
                        "candidate that runs the probe's",
                        opt_.probe, opt_.candidate));
      check_dump_modes(opt_.modes, opt_.modes_given, opt_.candidate);
      if (auto t = d->tokens()) {
        prompt_ = std::move(*t);
        source = fmt::format("the tokens of {}", opt_.candidate);
      }
    }
    check_from_step();
    if (prompt_.empty()) return;
    check_token_ids(prompt_, header, source);
    opt_.prompt_tokens = int(prompt_.size());
    check_bounds(header);
  }

  // (first position, tokens) of every model step.
  std::vector<std::pair<int, int>> step_sizes() const {
    std::vector<std::pair<int, int>> s = {{0, opt_.prompt_tokens}};
    for (int i = 1; i <= opt_.decode_steps; ++i) s.push_back({opt_.prompt_tokens + i - 1, 1});
    return s;
  }

  // The coverage gate, then the capability gate, of `cand` for `header`; with --fill, wraps
  // `cand` into the candidate completed by the reference fill.
  void gate(const ModelConfig& header, CandidatePtr& cand) {
    // A dump's unmapped stages are not refused: they are judged `missing`.
    const bool dump = as_dump(*cand) != nullptr;
    const GateAnswer g = gate_candidate(header, *cand, opt_.fill || dump);
    if (g.unavailable) throw InputError(g.refusal);
    if (!g.pass) {
      stop_ops_ = {g.need.str(), g.have.str(), g.missing.str()};
      throw GateRefusal(g.refusal);
    }
    if (dump) {
      cand = fill_declared_absent(std::move(cand), header, opt_.fill);
      return;
    }
    if (!opt_.fill || g.coverage.complete()) return;
    CandidatePtr fill = make_fill_candidate(cand->storage_dtype());
    cand = std::make_unique<FilledCandidate>(std::move(cand), std::move(fill));
    (void)plan_coverage(header, *cand);  // the merged plan must be sound too (throws PlanError)
  }

  void run_steps(Candidate& cand_ref, const ModelConfig& cfg, ref::Reference& reference,
                 std::vector<Lane>& lanes, const std::vector<int>& tokens) {
    Candidate* cand = &cand_ref;
    int pos0 = 0;
    for (int step = 0; step <= opt_.decode_steps; ++step) {
      const std::vector<int> step_tokens = step == 0 ? tokens : std::vector<int>{report_.tokens.back()};
      const int T = int(step_tokens.size());
      // Before --from-step only the reference runs (the floor too: its KV cache must be whole).
      const bool judged = step >= opt_.from_step;
      // What was this step's output becomes the previous step's for recurrent inputs.
      ref_prev_ = std::exchange(ref_latest_, {});
      for (auto& lane : lanes) lane.prev = std::exchange(lane.latest, {});
      Tensor tok(DType::i32, {T});
      for (int i = 0; i < T; ++i) tok.set(i, step_tokens[std::size_t(i)]);
      std::vector<std::int32_t> tok32(step_tokens.begin(), step_tokens.end());

      // Model-level: embed.
      TensorMap ref_stages = reference.embed(tok32, pos0);
      for (auto& lane : lanes) {
        if (!judged) continue;
        const TensorMap fs = lane.floor->embed(tok32, pos0);
        TensorMap outs = run_block(*cand, cfg, BlockKind::embed, kModelLayer, step, pos0, T, ref_stages, fs,
                                   lane, &tok, ref_stages.at("embed"));
        auto e = outs.find("embed");
        // A dump without embed (judged missing) still has layers to judge: they read no input.
        if (e == outs.end() && as_dump(*cand))
          e = outs.emplace("embed", ref_stages.at("embed").to(cand->storage_dtype())).first;
        if (e == outs.end()) throw CandidateCrash("embed", "the plan's embed block did not produce 'embed'");
        lane.x = e->second;
        lane.floor_x = fs.at("embed");
      }
      Tensor ref_x = ref_stages.at("embed");
      flush();
      for (int l = 0; l < cfg.n_layers; ++l) {
        event("reference_layer");
        TensorMap rs = reference.layer(l, ref_x, pos0);
        record_reference(l, rs);
        for (auto& lane : lanes) {
          const Tensor floor_in =
              lane.mode == Mode::isolated ? round_values(ref_x, cand->storage_dtype()) : lane.floor_x;
          const TensorMap fs = lane.floor->layer(l, floor_in, pos0);
          lane.floor_x = fs.at("residual_2");
          if (!judged) continue;
          TensorMap outs =
              run_block(*cand, cfg, cfg.block_kind(l), l, step, pos0, T, rs, fs, lane, &tok, ref_x);
          auto it = outs.find("residual_2");
          // A candidate that does not produce the layer output cannot continue its own chain.
          lane.x = it != outs.end() ? it->second : rs.at("residual_2").to(cand->storage_dtype());
        }
        ref_x = rs.at("residual_2");
        flush();
        maybe_test_kill();
      }
      // A step nobody judges needs only its last row's logits (the next token): a 2050-token
      // prefill before --from-step would otherwise hold [2050, vocab] doubles for nothing.
      TensorMap hs = reference.head(judged ? ref_x : ref_x.rows(T - 1, T));
      for (auto& lane : lanes) {
        if (!judged) continue;
        const TensorMap fs = lane.floor->head(
            lane.mode == Mode::isolated ? round_values(ref_x, cand->storage_dtype()) : lane.floor_x);
        const TensorMap outs =
            run_block(*cand, cfg, BlockKind::head, kModelLayer, step, pos0, T, hs, fs, lane, &tok, ref_x);
        const auto base = baseline_logits_.find("logits");
        if (baseline_ && base == baseline_logits_.end()) continue;  // nothing to hold the logits against
        if (auto it = outs.find("logits"); it != outs.end())
          note_logits(lane.mode, step, baseline_ ? base->second : hs.at("logits"), it->second);
      }
      flush();
      report_.tokens.push_back(ref::Reference::greedy_next(hs.at("logits")));
      pos0 += T;
    }
    report_.tokens.pop_back();  // the token after the last step was never fed
  }

  // Runs the candidate's plan for one block in one lane and judges every catalog stage.
  TensorMap run_block(Candidate& cand, const ModelConfig& cfg, BlockKind kind, int layer, int step, int pos0,
                      int T, const TensorMap& ref, const TensorMap& floor, Lane& lane, const Tensor* tokens,
                      const Tensor& ref_x) {
    const DType storage = cand.storage_dtype();
    TensorMap produced;
    std::set<std::string, std::less<>> filled;  // stages a fill step computed
    StepContext ctx{&cfg, step, layer, pos0, T};
    const std::vector<KernelStep> plan = cand.plan(cfg, kind);
    std::vector<TensorMap> step_inputs;  // kept to capture the inputs of failing steps
    races_.clear();
    for (const KernelStep& ks : plan) {
      TensorMap& inputs = step_inputs.emplace_back();
      for (const std::string& name : ks.inputs)
        inputs[name] = resolve(ks.name, name, lane, layer, ref, produced, tokens, ref_x, storage);
      TensorMap outs;
      try {
        event("candidate_step");
        cand.run(ks, ctx, inputs, outs);
        file_launches(ks, ctx, lane.mode);
      } catch (const CandidateCrash& crash) {
        // The stage it was in is crashed; everything judged before stays in the report and trace.
        for (const std::string& o : ks.outputs) {
          StageResult r;
          r.key = {step, layer, o};
          r.mode = lane.mode;
          r.status = Status::crashed;
          r.cand_dtype = storage;
          r.note = fmt::format("{}: {}", ks.name, crash.what());
          if (auto it = ref.find(o); it != ref.end()) r.shape = it->second.shape();
          record(std::move(r), nullptr, nullptr);
        }
        if (trace_) trace_->append_inputs(step, layer, lane.mode, pos0, T, ks.name, ks.outputs, inputs);
        throw;
      }
      for (const std::string& o : ks.outputs) {
        auto it = outs.find(o);
        if (it == outs.end()) {
          // A broken contract stops the run like a crash: the stage is recorded, nothing aborts.
          StageResult r;
          r.key = {step, layer, o};
          r.mode = lane.mode;
          r.status = Status::crashed;
          r.cand_dtype = storage;
          r.note = fmt::format("{}: declared '{}' as an output but did not produce it", ks.name, o);
          if (auto rt = ref.find(o); rt != ref.end()) r.shape = rt->second.shape();
          record(std::move(r), nullptr, nullptr);
          throw CandidateCrash(ks.name, fmt::format("did not produce its declared output '{}'", o));
        }
        if (is_fill_step(ks)) filled.insert(o);
        record_history(lane, layer, o, it->second);
        produced[o] = std::move(it->second);
      }
    }
    // --baseline: its own run of this block on the same inputs is what the stages are judged against.
    TensorMap base;
    if (baseline_) base = run_baseline_block(kind, layer, step, pos0, T, ref, produced, lane, tokens, ref_x);
    // Judge in catalog order; a catalog stage the candidate never produced is missing.
    const std::size_t judged_from = report_.results.size();
    std::vector<std::string_view> expected;
    if (layer == kModelLayer)
      for (const auto& s : block_stages(kind)) expected.push_back(s.name);
    else
      expected = stages_for(cfg, layer);
    for (std::string_view stage : expected) {
      auto r = ref.find(stage);
      if (r == ref.end()) continue;
      auto c = produced.find(stage);
      auto f = floor.find(stage);
      if (filled.count(stage)) {
        record_filled(step, layer, std::string(stage), lane.mode, storage, r->second, c->second);
        continue;
      }
      const Tensor* cand_t = c == produced.end() ? nullptr : &c->second;
      if (baseline_) {
        // Against the baseline there is no noise floor: two kernels on one input, not a rounding model.
        std::variant<Tensor, StageResult> against =
            baseline_->target(base, {step, layer, std::string(stage)}, lane.mode, storage, r->second);
        if (auto* t = std::get_if<Tensor>(&against))
          judge(step, layer, std::string(stage), lane.mode, storage, *t, cand_t, nullptr);
        else
          record(std::move(std::get<StageResult>(against)), nullptr, nullptr);
        continue;
      }
      judge(step, layer, std::string(stage), lane.mode, storage, r->second, cand_t,
            f == floor.end() ? nullptr : &f->second);
    }
    // A failing stage's step gets its inputs stored, so `driftscope replay` can re-run it alone.
    if (trace_)
      for (std::size_t i = judged_from; i < report_.results.size(); ++i) {
        const StageResult& r = report_.results[i];
        if (!is_failure(r)) continue;
        for (std::size_t k = 0; k < plan.size(); ++k)
          if (std::find(plan[k].outputs.begin(), plan[k].outputs.end(), r.key.stage) !=
                  plan[k].outputs.end() &&
              captured_.insert({step, layer, int(lane.mode), plan[k].name}).second)
            trace_->append_inputs(step, layer, lane.mode, pos0, T, plan[k].name, plan[k].outputs,
                                  step_inputs[k]);
      }
    return produced;
  }

  // Files the launches the step just made under its stages (report and trace).
  // A launch found racing (--race-check) makes every stage of its step a `race`.
  void file_launches(const KernelStep& ks, const StepContext& ctx, Mode mode) {
    std::size_t index = 0;
    for (LaunchRecord& l : launch_log::take()) {
      if (!l.race.empty())
        for (const std::string& o : ks.outputs)
          races_.try_emplace(o, launch_log::race_note(index, ks.name, l));
      ++index;
      StepLaunch sl{ctx.step, ctx.layer, mode, ks.name, ks.outputs, std::move(l)};
      if (trace_) trace_->append_launch(sl);
      report_.launches.push_back(std::move(sl));
    }
  }

  Tensor resolve(const std::string& step, const std::string& name, Lane& lane, int layer,
                 const TensorMap& ref, const TensorMap& produced, const Tensor* tokens, const Tensor& ref_x,
                 DType storage) {
    const bool isolated = lane.mode == Mode::isolated;
    if (name == "tokens") return *tokens;
    if (name == "x") return isolated ? ref_x.to(storage) : lane.x;
    if (name.rfind("cache:", 0) == 0 || name.rfind("prev:", 0) == 0) {
      const bool is_cache = name[0] == 'c';
      const std::string stage = name.substr(name.find(':') + 1);
      auto& hist = is_cache ? (isolated ? ref_cache_ : lane.cache) : (isolated ? ref_prev_ : lane.prev);
      auto it = hist.find({layer, stage});
      if (it == hist.end()) return Tensor{};
      return it->second.to(storage);
    }
    if (isolated) {
      auto it = ref.find(name);
      if (it == ref.end())
        throw CandidateCrash(step, fmt::format("reads '{}', which the reference has not", name));
      return it->second.to(storage);
    }
    auto it = produced.find(name);
    if (it == produced.end())
      throw CandidateCrash(step, fmt::format("reads '{}' before any step of its plan produced it", name));
    return it->second;
  }

  void note_cached(const KernelStep& ks) {
    for (const std::string& in : ks.inputs)
      if (in.rfind("cache:", 0) == 0) cached_.insert(in.substr(6));
  }

  void record_history(Lane& lane, int layer, const std::string& stage, const Tensor& t) {
    auto key = std::make_pair(layer, stage);
    if (cached_.count(stage))
      lane.cache[key] = Tensor::concat_rows(lane.cache.count(key) ? lane.cache[key] : Tensor{}, t);
    lane.latest[key] = t;
  }

 public:
  // The reference's own history feeds isolated mode's cache: and prev: inputs.
  void record_reference(int layer, const TensorMap& rs) {
    for (const auto& [stage, t] : rs) {
      auto key = std::make_pair(layer, stage);
      if (cached_.count(stage))
        ref_cache_[key] = Tensor::concat_rows(ref_cache_.count(key) ? ref_cache_[key] : Tensor{}, t);
      ref_latest_[key] = t;
    }
  }

 private:
  // The values of `x` once stored in `t`, kept as f64 (what the floor reference consumes).
  static Tensor round_values(const Tensor& x, DType t) { return x.to(t).to(DType::f64); }

  // A hidden test hook (DRIFTSCOPE_TEST_KILL_AFTER_LAYERS=N): SIGKILL ourselves after N flushed
  // layers, so the crash-safety test of the trace is deterministic.
  void maybe_test_kill() {
    static const char* env = std::getenv("DRIFTSCOPE_TEST_KILL_AFTER_LAYERS");
    if (env && ++layers_flushed_ >= std::atoi(env)) std::raise(SIGKILL);
  }

  void judge(int step, int layer, std::string stage, Mode mode, DType storage, const Tensor& ref,
             const Tensor* cand, const Tensor* floor) {
    StageResult r;
    r.key = {step, layer, std::move(stage)};
    r.mode = mode;
    r.cand_dtype = storage;
    r.shape = ref.shape();
    if (!cand) {
      r.status = Status::missing;
      r.note = "the candidate produced no tensor for this stage";
    } else if (cand->numel() != ref.numel()) {
      r.status = Status::shape_mismatch;
      r.note =
          fmt::format("candidate shape {} vs reference {}", shape_str(cand->shape()), shape_str(ref.shape()));
    } else {
      const Tensor c = cand->reshaped(ref.shape());
      r.cand_hash = content_hash(c);
      r.m.ref_rms = rms(ref.view());
      if (floor && floor->numel() == ref.numel()) {
        const Metrics fm = compute_metrics(ref.view(), floor->view(), storage, {});
        r.floor_max_abs = fm.max_abs;
        r.floor_rms = fm.rms;
        r.floor_mean_abs = fm.mean_abs;
      }
      r.m = compute_metrics(ref.view(), c.view(), storage, policy_.tolerance(r));
      if (floor && floor->numel() == ref.numel()) {
        const TensorView fv = floor->view();
        const BiasFit bias = fit_bias(ref.view(), c.view(), &fv);
        r.bias_slope = bias.slope;
        r.bias_se = bias.se;
      }
      if (ref.rank() == 2 && ref.dim(0) > 1) r.per_token_rel = per_row_relative_error(ref.view(), c.view());
    }
    policy_.judge(r);
    if (auto race = races_.find(r.key.stage); race != races_.end()) {
      r.status = Status::race;
      r.note = race->second;
    }
    if (is_failure(r) && cand && cand->numel() == ref.numel()) {
      // Around the element the row is shown by (the first mismatch, else the largest difference),
      // where the reader looks, not at elements 0..4.
      const std::int64_t at = evidence_index(r.m);
      r.head_from = at < 0 ? 0 : std::max<std::int64_t>(0, std::min(at, ref.numel() - 5) - 2);
      r.head_ref = head_values(ref, r.head_from, 5);
      r.head_cand = head_values(*cand, r.head_from, 5);
    }
    const Tensor cand_shaped = cand && cand->numel() == ref.numel() ? cand->reshaped(ref.shape()) : Tensor{};
    record(std::move(r), &ref, cand_shaped.empty() ? nullptr : &cand_shaped);
  }

  // Who crashed: the candidate, or the baseline it is judged against (never taken for the other).
  std::string crasher(const CandidateCrash& crash) const {
    if (!dynamic_cast<const BaselineCrash*>(&crash)) return "candidate";
    return fmt::format("baseline {}", baseline_ ? baseline_->name() : opt_.baseline);
  }

  // The baseline's run of this block on the inputs the candidate got (isolated mode). A baseline
  // crash records the stages of its step crashed, under the baseline's name, and stops the run.
  TensorMap run_baseline_block(BlockKind kind, int layer, int step, int pos0, int T, const TensorMap& ref,
                               const TensorMap& produced, Lane& lane, const Tensor* tokens,
                               const Tensor& ref_x) {
    try {
      TensorMap out = baseline_->run_block(
          kind, step, layer, pos0, T, [&](const std::string& s, const std::string& in, DType storage) {
            return resolve(s, in, lane, layer, ref, produced, tokens, ref_x, storage);
          });
      if (kind == BlockKind::head) baseline_logits_ = out;
      return out;
    } catch (const BaselineCrash& crash) {
      for (StageResult& r : baseline_->crashed_stages(crash, step, layer, lane.mode, ref))
        record(std::move(r), nullptr, nullptr);
      throw;
    }
  }

  // A stage the reference fill computed: recorded so every report shows it, never judged.
  void record_filled(int step, int layer, std::string stage, Mode mode, DType storage, const Tensor& ref,
                     const Tensor& value) {
    StageResult r;
    r.key = {step, layer, std::move(stage)};
    r.mode = mode;
    r.status = Status::filled;
    r.cand_dtype = storage;
    r.shape = ref.shape();
    r.note = fmt::format("computed by the reference fill ({}), not by the candidate", dtype_name(storage));
    const Tensor v = value.numel() == ref.numel() ? value.reshaped(ref.shape()) : Tensor{};
    record(std::move(r), &ref, v.empty() ? nullptr : &v);
  }

  void record(StageResult r, const Tensor* ref, const Tensor* cand) {
    if (trace_) trace_->append(r, ref, cand);
    report_.results.push_back(std::move(r));
  }

  nlohmann::json run_json(const ModelConfig* cfg) const {
    return ds::run_json(opt_, policy_, cfg, candidate_, baseline_ ? baseline_->json() : nlohmann::json());
  }

  void open_trace(const ModelConfig& cfg) {
    try {
      trace_ = std::make_unique<trace::TraceWriter>(
          opt_.trace_path, trace_root_json(opt_), run_json(&cfg),
          trace::WriterOptions{opt_.capture, opt_.capture_stages, opt_.capture_layer_min,
                               opt_.capture_layer_max});
    } catch (const trace::TraceError& e) {
      throw InputError(e.what());
    }
  }

 public:
  // The run stopped before any stage ran: its trace still says so (trace_stub.h). Best effort:
  // the stop itself is what the caller reports, and a trace path that cannot be written was
  // already named by the error that stopped the run.
  void leave_stopped_trace(const char* status, int exit_code, const std::string& reason) {
    if (opt_.trace_path.empty()) return;
    const trace::StoppedRun stop{status, exit_code, reason, stop_ops_[0], stop_ops_[1], stop_ops_[2]};
    try {
      if (trace_) {
        trace_->finish(trace::stopped_result(stop));
        trace_.reset();
      } else {
        trace::write_stopped_trace(opt_.trace_path, trace_root_json(opt_),
                                   run_json(header_ ? &*header_ : nullptr), stop);
      }
    } catch (const trace::TraceError& e) {
      leave_write_failure(e.what());
    }
  }

  // A trace write failed (disk full): the trace keeps the rows whose flush succeeded and records
  // the failure (trace_commit.h). False when even that record could not be stored.
  bool leave_write_failure(const std::string& reason) {
    if (!trace_) return false;
    const trace::StoppedRun stop{trace::kStatusWriteFailed, kExitUsage, reason, {}, {}, {}};
    const bool stored = trace_->record_failure(trace::stopped_result(stop));
    trace_.reset();
    return stored;
  }

 private:
  void note_logits(Mode mode, int step, const Tensor& ref, const Tensor& cand) {
    if (cand.numel() != ref.numel()) return;
    const Tensor c = cand.reshaped(ref.shape());
    const LogitsMetrics m = compare_logits(ref, c);
    auto it = std::find_if(report_.logits.begin(), report_.logits.end(),
                           [&](const auto& l) { return l.mode == mode; });
    if (it == report_.logits.end()) it = report_.logits.insert(report_.logits.end(), LaneLogits{mode});
    it->max_kl = std::max(it->max_kl, m.max_kl);
    it->min_top1 = std::min(it->min_top1, m.top1_agreement);
    it->disagreements += m.disagreements;
    it->max_disagree_margin = std::max(it->max_disagree_margin, m.max_disagree_margin);
    const std::int64_t last = ref.dim(0) - 1;
    if (it->first_token_divergence < 0 && argmax_row(ref, last) != argmax_row(c, last))
      it->first_token_divergence = step;
  }

  void event(std::string_view what) {
    if (opt_.on_event) opt_.on_event(what);
  }

  void flush() {
    if (trace_) trace_->flush();
  }

  void finish() {
    mark_inherited(report_.results);
    report_.crash = crash_;
    conclude(report_);
    locate_drift(report_);
    const auto& f = report_.first_failure;
    if (trace_) {
      nlohmann::json res = {{"status", trace::kStatusRan},
                            {"verdict", report_.verdict},
                            {"exit_code", report_.exit_code},
                            {"tokens", report_.tokens}};
      // A crash in load() or a plan leaves no crashed row: `report` reads the exit 4 from here.
      if (!crash_.empty()) res["crash"] = crash_;
      if (!report_.drift.empty()) {
        res["drift"] = report_.drift;
        res["drift_start_layer"] =
            report_.drift_start ? nlohmann::json(*report_.drift_start) : nlohmann::json(nullptr);
      }
      for (const auto& l : report_.logits)
        res["logits"][std::string(mode_name(l.mode))] = {
            {"max_kl", l.max_kl},
            {"min_top1_agreement", l.min_top1},
            {"first_token_divergence_step", l.first_token_divergence},
            {"disagreements", l.disagreements},
            {"max_disagree_margin", l.max_disagree_margin}};
      if (f)
        res["first_failure"] = {{"step", f->key.step},
                                {"layer", f->key.layer},
                                {"stage", f->key.stage},
                                {"mode", mode_name(f->mode)},
                                {"first_mismatch", f->m.first_mismatch}};
      trace_->finish(res);
    }
  }

  RunOptions opt_;
  std::optional<ModelConfig> header_;    // once the model's configuration is read
  nlohmann::json candidate_;             // once the candidate is made (null before)
  std::array<std::string, 3> stop_ops_;  // required, supported, missing: set by a refusal
  std::string crash_;
  std::optional<PluginInfo> origin_;                           // the plugin file behind the candidate, if any
  std::set<std::string, std::less<>> cached_;                  // stages read as "cache:<stage>"
  std::set<std::tuple<int, int, int, std::string>> captured_;  // steps whose inputs are stored
  std::map<std::string, std::string, std::less<>> races_;      // this block's racing stages: why
  std::optional<launch_sinks::ScopedOptions> simt_options_;    // the run's SIMT settings, while it runs
  std::optional<Baseline> baseline_;                           // --baseline, once made and gated
  TensorMap baseline_logits_;                                  // the baseline's head block, this step
  const Policy& policy_;
  RunReport report_;
  std::unique_ptr<trace::TraceWriter> trace_;
  int layers_flushed_ = 0;
  std::vector<int> prompt_;  // given (--tokens or the dump's); empty: drawn from the seed
  Numerics numerics_;        // how the noise floors compute (settle_numerics)
  std::map<std::pair<int, std::string>, Tensor> ref_cache_, ref_prev_, ref_latest_;
};

}  // namespace

std::optional<std::string> capability_refusal(const ModelConfig& cfg, const Candidate& cand) {
  return capability_refusal(cfg, cand, ref::required_ops(cfg));
}

std::optional<std::string> capability_refusal(const ModelConfig& cfg, const Candidate& cand,
                                              const OpSet& need) {
  const OpSet have = cand.capabilities();
  if (have.contains(need)) return std::nullopt;
  const OpSet missing = need.minus(have);
  return fmt::format(
      "REFUSED by the capability gate: {} cannot serve {} ({})\n"
      "  Model requires:   {}\n"
      "  Backend supports: {}\n"
      "  Missing:          {}\n"
      "  -> Run {} on a candidate that implements {} (see `driftscope gate --model {}`),\n"
      "     or implement {} in {}. Nothing was computed.",
      cand.name(), cfg.name, family_name(cfg.family), need.str(), have.str(), missing.str(), cfg.name,
      missing.str(), cfg.name, missing.str(), cand.name());
}

RunReport run_parity(const RunOptions& opt, const Policy& policy) {
  Run run(opt, policy);
  try {
    if (opt.prompt_tokens <= 0) throw InputError("--prompt-tokens must be at least 1");
    if (opt.decode_steps < 0) throw InputError("--decode-steps must not be negative");
    if (opt.layers < 0) throw InputError("--layers must not be negative (0: every layer)");
    return run.go();
  } catch (const GateRefusal& e) {
    run.leave_stopped_trace(trace::kStatusRefused, kExitRefused, e.what());
    throw;
  } catch (const InputError& e) {
    run.leave_stopped_trace(trace::kStatusBadInput, kExitUsage, e.full());
    throw;
  } catch (const trace::TraceError& e) {
    // The trace cannot be written (disk full, I/O error): exit 2 naming it; the stages written
    // before stay readable, INCOMPLETE, and the trace says the write failed.
    const bool recorded = run.leave_write_failure(e.what());
    throw TraceWriteError(e.what(), recorded);
  }
}

}  // namespace ds
