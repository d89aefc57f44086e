// Phase 4, the step loop (phases.h): for every model step (the prefill, then each decode step)
// the reference runs embed, every layer and the head; every lane runs the candidate's plan for
// the same block, and each catalog stage is judged against the run's yardstick and streamed
// into the trace, flushed once per layer.
//
// A run is a batch of sequences (`run --batch`, batch_feature.h); a run of one sequence is a
// batch of one. Each sequence has its own reference, noise floors and histories (its KV cache and
// recurrent state): the reference computes it alone. The candidate is handed the batch's active
// sequences in one call per step where it batches the block kind, else one call per sequence;
// every stage is judged per sequence.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "batch_rows.h"
#include "dump_run.h"
#include "judge_stage.h"
#include "launch_log.h"
#include "launch_sinks.h"
#include "metrics.h"
#include "moe_ties.h"
#include "policy.h"
#include "phases.h"
#include "prompt.h"
#include "stage_catalog.h"
#include "step_seq.h"
#include "simt/simt_common.h"

namespace ds {

namespace {

class StepLoop {
 public:
  StepLoop(RunState& s, Loaded& run) : s_(s), run_(run), against_(s.features.yardstick()) {
    make_sequences();
    const ModelConfig& cfg = run_.model->config;
    const auto note_prev = [&](BlockKind kind) {
      for (const KernelStep& ks : plan_of(kind))
        for (const std::string& in : ks.inputs)
          if (in.rfind("prev:", 0) == 0) states_.insert(in.substr(5));
    };
    for (int l = 0; l < cfg.n_layers; ++l) note_prev(cfg.block_kind(l));
  }

  void go() {
    const ModelConfig& cfg = run_.model->config;
    const DType storage = run_.cand->storage_dtype();
    for (auto& q : seqs_) prime(q);
    for (int step = 0; step <= s_.opt.decode_steps; ++step) {
      const bool judged = LateStart::judged(s_.opt, step);
      std::vector<Seq*> active;
      for (auto& q : seqs_)
        if (q.active(step)) active.push_back(&q);
      for (const SlotMove& m : slot_plan_)
        if (m.step == step) seqs_[std::size_t(m.seq)].state_slot = m.from;
      for (Seq* q : active) {
        const bool prefill = step == q->join;
        q->T = prefill ? int(q->prompt.size()) : 1;
        const std::vector<int> step_tokens = prefill ? q->prompt : std::vector<int>{q->fed.back()};
        if (prefill) q->fed = q->prompt;
        // What was this step's output becomes the previous step's for recurrent inputs.
        q->ref_prev = std::exchange(q->ref_latest, {});
        for (auto& lane : q->lanes) lane.prev = std::exchange(lane.latest, {});
        q->tok = Tensor(DType::i32, {q->T});
        for (int i = 0; i < q->T; ++i) q->tok.set(i, step_tokens[std::size_t(i)]);
      }

      // Model-level: embed.
      for (Seq* q : active) {
        const std::vector<std::int32_t> tok32(q->tok.data<std::int32_t>(),
                                              q->tok.data<std::int32_t>() + q->T);
        q->ref = q->oracle->embed(tok32, q->pos);
        q->ref_x = q->ref.at("embed");
        q->floor_stages.assign(q->lanes.size(), {});
        for (std::size_t li = 0; li < q->lanes.size(); ++li) {
          Lane& lane = q->lanes[li];
          if (judged) q->floor_stages[li] = lane.floor->embed(tok32, q->pos);
          if (!lane.own_oracle) continue;
          // The embedding has no state: the same on every path.
          lane.own_x = q->own_ref_x[li] = q->ref_x;
          q->own_ref[li] = q->ref;
        }
      }
      for (std::size_t li = 0; li < run_.lanes.size() && judged; ++li)
        for_each_group(BlockKind::embed, active, [&](const std::vector<Seq*>& group) {
          const SeqOutputs outs = run_block(BlockKind::embed, kModelLayer, step, group, li);
          for (std::size_t i = 0; i < group.size(); ++i) {
            Seq& q = *group[i];
            TensorMap o = outs[i];
            DumpFeature::stand_in_embed(*run_.cand, o, q.ref.at("embed"));
            auto e = o.find("embed");
            if (e == o.end()) throw CandidateCrash("embed", "the plan's embed block did not produce 'embed'");
            q.lanes[li].x = e->second;
            q.lanes[li].floor_x = q.floor_stages[li].at("embed");
          }
        });
      s_.flush();
      for (int l = 0; l < cfg.n_layers; ++l) {
        for (Seq* q : active) {
          s_.event("reference_layer");
          q->ref = q->oracle->layer(l, q->ref_x, q->pos);
          record_reference(*q, l, q->ref);
          for (std::size_t li = 0; li < q->lanes.size(); ++li) {
            Lane& lane = q->lanes[li];
            const bool isolated = lane.mode == Mode::isolated;
            const Tensor floor_in = isolated ? round_values(q->ref_x, storage) : lane.floor_x;
            const TensorMap forced =
                isolated ? step_inputs_as_given(cfg.block_kind(l), q->ref, storage) : TensorMap{};
            q->floor_stages[li] = lane.floor->layer(l, floor_in, q->pos, isolated ? &forced : nullptr);
            lane.floor_x = q->floor_stages[li].at("residual_2");
            // A chained lane that took a legitimate near-tie choice the oracle did not follows its
            // own copy of the oracle from there on (settle_moe_tie), given that choice.
            if (!lane.own_oracle || !judged) continue;
            q->own_ref_x[li] = lane.own_x;
            q->own_ref[li] = lane.own_oracle->layer(l, lane.own_x, q->pos);
            lane.own_x = q->own_ref[li].at("residual_2");  // settle_moe_tie replaces it after a further flip
          }
        }
        for (std::size_t li = 0; li < run_.lanes.size() && judged; ++li)
          for_each_group(cfg.block_kind(l), active, [&](const std::vector<Seq*>& group) {
            const SeqOutputs outs = run_block(cfg.block_kind(l), l, step, group, li);
            for (std::size_t i = 0; i < group.size(); ++i) {
              Seq& q = *group[i];
              auto it = outs[i].find("residual_2");
              // A candidate that does not produce the layer output cannot continue its own chain.
              q.lanes[li].x =
                  it != outs[i].end() ? it->second : inputs_of(q, li).ref->at("residual_2").to(storage);
            }
          });
        for (Seq* q : active) q->ref_x = q->ref.at("residual_2");
        s_.flush();
        maybe_test_kill();
      }
      for (Seq* q : active) {
        // A step nobody judges needs only its last row's logits (the next token): a 2050-token
        // prefill before --from-step would otherwise hold [2050, vocab] doubles for nothing.
        q->ref = q->oracle->head(judged ? q->ref_x : q->ref_x.rows(q->T - 1, q->T));
        for (std::size_t li = 0; li < q->lanes.size() && judged; ++li) {
          Lane& lane = q->lanes[li];
          const bool isolated = lane.mode == Mode::isolated;
          const TensorMap forced =
              isolated ? step_inputs_as_given(BlockKind::head, q->ref, storage) : TensorMap{};
          q->floor_stages[li] = lane.floor->head(isolated ? round_values(q->ref_x, storage) : lane.floor_x,
                                                 isolated ? &forced : nullptr);
          if (!lane.own_oracle) continue;
          q->own_ref_x[li] = lane.own_x;
          q->own_ref[li] = lane.own_oracle->head(lane.own_x);
        }
      }
      for (std::size_t li = 0; li < run_.lanes.size() && judged; ++li)
        for_each_group(BlockKind::head, active, [&](const std::vector<Seq*>& group) {
          const SeqOutputs outs = run_block(BlockKind::head, kModelLayer, step, group, li);
          for (std::size_t i = 0; i < group.size(); ++i) {
            const Tensor* held_to = against_.logits(*inputs_of(*group[i], li).ref);
            if (!held_to) continue;  // nothing to hold the logits against
            if (auto it = outs[i].find("logits"); it != outs[i].end())
              note_logits(s_.report, run_.lanes[li].mode, step, *held_to, it->second);
          }
        });
      s_.flush();
      for (Seq* q : active) {
        q->fed.push_back(next_token(*q, step));
        q->pos += q->T;
      }
    }
    // The first sequence's tokens are the run's (a run of one sequence has no other).
    s_.report.tokens = seqs_.front().fed;
    s_.report.tokens.pop_back();  // the token after the last step was never fed
  }

 private:
  // Sequence 0 runs on the loaded oracle and lanes; the others get their own (the reference
  // computes each sequence alone, with a KV cache of its own).
  void make_sequences() {
    const BatchFeature& batch = s_.features.batch;
    const ModelConfig& cfg = run_.model->config;
    const int n = batch.active() ? int(batch.spec().seqs.size()) : 1;
    const int first = seeded_prompt_start(s_.opt.model);
    if (batch.active()) slot_plan_ = batch.spec().slot_plan();
    seqs_.resize(std::size_t(n));
    for (int i = 0; i < n; ++i) {
      Seq& q = seqs_[std::size_t(i)];
      q.id = i;
      if (i == 0) {
        q.oracle = run_.oracle.get();
        q.lanes = std::move(run_.lanes);
        run_.lanes.clear();
        for (const Lane& l : q.lanes) run_.lanes.push_back(Lane{l.mode, {}, {}, {}, {}, {}, {}});
      } else {
        q.own_oracle = std::make_unique<ref::Reference>(run_.model);
        q.oracle = q.own_oracle.get();
        for (const Lane& l : run_.lanes) {
          q.lanes.push_back(Lane{l.mode, {}, {}, {}, {}, {}, {}});
          q.lanes.back().floor = std::make_unique<ref::Reference>(
              run_.model,
              ref::ReferenceOptions{.storage = run_.cand->storage_dtype(), .numerics = s_.numerics});
        }
      }
      q.own_ref.resize(q.lanes.size());
      q.own_ref_x.resize(q.lanes.size());
      if (batch.active()) {
        const SeqSpec& spec = batch.spec().seqs[std::size_t(i)];
        q.prompt = batch.prompt(i, cfg, s_.opt.seed, first);
        q.decode_steps = spec.decode_steps;
        q.join = spec.join;
      } else {
        q.prompt = run_.tokens;
        q.decode_steps = s_.opt.decode_steps;
      }
    }
  }

  // A sequence that starts at a later position (a batch file's `start`) had a prefix before the
  // batch: the reference computes it alone, the floors follow it, and both lanes start from the
  // reference's cache and state of it at the storage dtype (the candidate never saw the prefix).
  void prime(Seq& q) {
    const BatchFeature& batch = s_.features.batch;
    if (!batch.active()) return;
    const ModelConfig& cfg = run_.model->config;
    const std::vector<int> prefix = batch.prefix(q.id, cfg, s_.opt.seed, seeded_prompt_start(s_.opt.model));
    if (prefix.empty()) return;
    const DType storage = run_.cand->storage_dtype();
    const std::vector<std::int32_t> tok32(prefix.begin(), prefix.end());
    Tensor x = q.oracle->embed(tok32, 0).at("embed");
    for (auto& lane : q.lanes) lane.floor->embed(tok32, 0);
    for (int l = 0; l < cfg.n_layers; ++l) {
      const TensorMap rs = q.oracle->layer(l, x, 0);
      record_reference(q, l, rs);
      // Both lanes start from the reference's prefix as stored (below), so every floor computes
      // the prefix as the isolated floor computes a step: from the reference's values as handed
      // over. A chained floor run on its own outputs would start the sequence with the prefix's
      // compounded error the candidate never had, and its chained error would look like drift.
      const TensorMap forced = step_inputs_as_given(cfg.block_kind(l), rs, storage);
      for (auto& lane : q.lanes) lane.floor->layer(l, round_values(x, storage), 0, &forced);
      x = rs.at("residual_2");
    }
    for (auto& lane : q.lanes) {
      for (const auto& [key, t] : q.ref_cache) lane.cache[key] = t.to(storage);
      for (const auto& [key, t] : q.ref_latest) lane.latest[key] = t.to(storage);
    }
    q.pos = int(prefix.size());
  }

  // The calls a block takes: every active sequence in one where the candidate batches the kind
  // (and the run is a batch), else one call per sequence.
  template <class Fn>
  void for_each_group(BlockKind kind, const std::vector<Seq*>& active, Fn&& fn) {
    if (s_.features.batch.active() && run_.cand->batches(kind)) {
      fn(active);
      return;
    }
    for (Seq* q : active) fn(std::vector<Seq*>{q});
  }

  // The candidate's plan for a kind of block (a function of the model and the kind: asked once).
  const std::vector<KernelStep>& plan_of(BlockKind kind) {
    auto it = plans_.find(kind);
    if (it == plans_.end()) it = plans_.emplace(kind, run_.cand->plan(run_.model->config, kind)).first;
    return it->second;
  }

  // The reference's stages that the candidate's kernel steps of this block read, as isolated
  // mode hands them over (rounded to storage). The isolated floor consumes these too, so each
  // stage's floor is what its own kernel step adds, not a chain of rounding through the layer
  // (which realises a different input perturbation than the candidate's: at large scores the
  // two diverge by more than the statistical limit allows).
  // A `cache:X` input is the reference's X of every step so far, so the floor's cache takes its X.
  // (A `prev:` state is not forced: the floor carries its own recurrent state.)
  TensorMap step_inputs_as_given(BlockKind kind, const TensorMap& ref, DType storage) {
    TensorMap given;
    for (const KernelStep& ks : plan_of(kind))
      for (std::string_view name : ks.inputs) {
        if (name.starts_with("cache:")) name.remove_prefix(6);
        if (auto it = ref.find(name); it != ref.end() && !given.count(name))
          given[std::string(name)] = round_values(it->second, storage);
      }
    return given;
  }

  // What a sequence's block in one lane is held to: the oracle's stages, or where the lane
  // follows its own oracle after a MoE near-tie, that one's.
  static BlockInputs inputs_of(const Seq& q, std::size_t li) {
    const bool own = q.lanes[li].own_oracle != nullptr;
    return {own ? &q.own_ref[li] : &q.ref, &q.floor_stages[li], own ? &q.own_ref_x[li] : &q.ref_x};
  }

  // Runs the candidate's plan for one block in one lane, for the sequences of `group` in one call
  // each step, and judges every catalog stage of each sequence.
  SeqOutputs run_block(BlockKind kind, int layer, int step, const std::vector<Seq*>& group, std::size_t li) {
    Candidate& cand = *run_.cand;
    const ModelConfig& cfg = run_.model->config;
    const DType storage = cand.storage_dtype();
    const Mode mode = run_.lanes[li].mode;
    const bool batched = s_.features.batch.active() && cand.batches(kind);
    SeqOutputs produced(group.size());
    std::set<std::string, std::less<>> filled;  // stages a fill step computed
    StepContext ctx{&cfg, step, layer, group.front()->pos, 0, {}};
    int cache_rows = 0;
    for (const Seq* q : group) {
      if (batched)
        ctx.seqs.push_back(SeqSpan{q->id, ctx.n_tokens, q->T, q->pos, cache_rows, q->lanes[li].prev.empty(),
                                   q->lanes[li].prev.empty() ? -1 : q->state_slot});
      ctx.n_tokens += q->T;
      cache_rows += q->pos + q->T;
    }
    const std::vector<KernelStep>& plan = plan_of(kind);
    // What each sequence's stages are held to and its isolated steps are fed: the oracle's stages,
    // or after a legitimate near-tie in a MoE router, the oracle's given the candidate's choice.
    std::vector<BlockInputs> in(group.size());
    std::vector<std::unique_ptr<TieInputs>> ties(group.size());
    for (std::size_t i = 0; i < group.size(); ++i) in[i] = inputs_of(*group[i], li);
    std::vector<TensorMap> step_inputs;  // kept to capture the inputs of failing steps
    launch_findings_.clear();
    findings_.clear();
    for (const KernelStep& ks : plan) {
      TensorMap& inputs = step_inputs.emplace_back();
      std::vector<TensorMap> alone(group.size());  // each sequence's own inputs (the batch checks)
      for (const std::string& name : ks.inputs) {
        for (std::size_t i = 0; i < group.size(); ++i)
          alone[i][name] = resolve(ks.name, name, *group[i], li, layer, in[i], produced[i], storage);
        std::vector<Tensor> parts;
        for (auto& a : alone) parts.push_back(a[name]);
        inputs[name] = group.size() == 1             ? std::move(parts.front())
                       : name.rfind("prev:", 0) == 0 ? stack_states(parts)
                                                     : stack_rows(parts);
      }
      TensorMap outs;
      try {
        s_.event("candidate_step");
        if (!s_.opt.isolate_process) {
          // --no-isolate: the candidate's runtime is this process's (a child files its own steps).
          launch_sinks::begin_step(ks.name);
          cand.run(ks, ctx, inputs, outs);
          launch_sinks::end_step();
          launch_log::set_live_allocations(launch_sinks::live_step_allocations());
        } else {
          cand.run(ks, ctx, inputs, outs);
        }
        file_launches(ks, ctx, mode);
        if (batched && !FillFeature::fills(ks) && has_outputs(ks, outs))
          check_batch_call(
              cand,
              {ks, ctx, inputs, outs, alone, states_, [this](const std::string& n) { return index_range(n); },
               cand.batch_order_varies(kind),
               [&](std::size_t i, const std::string& st) { return floor_limit(in[i], st, storage); }},
              s_.features.batch.checks(), findings_);
      } catch (const CandidateCrash& crash) {
        // The stage it was in is crashed; everything judged before stays in the report and trace.
        for (const Seq* q : group)
          for (const std::string& o : ks.outputs)
            record_crashed(step, layer, *q, o, mode, storage, fmt::format("{}: {}", ks.name, crash.what()));
        if (s_.trace && !s_.features.batch.active())
          s_.trace->append_inputs(step, layer, mode, ctx.pos0, ctx.n_tokens, ks.name, ks.outputs, inputs);
        throw;
      }
      for (const std::string& o : ks.outputs) {
        auto it = outs.find(o);
        if (it == outs.end()) {
          // A broken contract stops the run like a crash: the stage is recorded, nothing aborts.
          for (const Seq* q : group)
            record_crashed(step, layer, *q, o, mode, storage,
                           fmt::format("{}: declared '{}' as an output but did not produce it", ks.name, o));
          throw CandidateCrash(ks.name, fmt::format("did not produce its declared output '{}'", o));
        }
        if (FillFeature::fills(ks)) filled.insert(o);
        for (std::size_t i = 0; i < group.size(); ++i) {
          Tensor part = !batched           ? it->second
                        : states_.count(o) ? state_part(it->second, i, group.size(), ks.name, o)
                                           : row_part(it->second, ctx.seqs[i], ctx.n_tokens, ks.name, o);
          record_history(*group[i], li, layer, o, part);
          produced[i][o] = std::move(part);
        }
      }
      if (!cfg.moe() || kind == BlockKind::gpt2) continue;
      for (std::size_t i = 0; i < group.size(); ++i)
        if (!ties[i] && produced[i].count("expert_ids"))
          if ((ties[i] = settle_moe_tie(s_, cfg, cand.storage_dtype(), step, layer, *group[i], li, in[i],
                                        produced[i].at("expert_ids"))))
            in[i] = ties[i]->inputs;
    }
    for (std::size_t i = 0; i < group.size(); ++i) {
      Seq& q = *group[i];
      // The yardstick's own run of this block on the same inputs (--baseline), if it has one.
      against_.block_ran(s_, {kind, step, layer, q.pos, q.T, mode, *in[i].ref},
                         [&](const std::string& st, const std::string& name, DType dt) {
                           return resolve(st, name, q, li, layer, in[i], produced[i], dt);
                         });
      // The local check: the block again, by honest engines, from the candidate's own inputs.
      Lane& lane = q.lanes[li];
      TensorMap honest, alt;
      if (lane.honest.f32_sums && kind != BlockKind::embed)
        lane.honest.recompute(kind == BlockKind::head ? -1 : layer, q.pos, lane.x, produced[i], filled,
                              *in[i].ref, honest, alt);
      judge_block(kind, layer, step, q, li, in[i], produced[i], filled, plan, step_inputs, honest, alt);
    }
    return produced;
  }

  // The range of an index input (token ids, chosen expert ids); 0 for a value input.
  std::int64_t index_range(const std::string& input) const {
    const ModelConfig& cfg = run_.model->config;
    if (input == "tokens") return cfg.vocab;
    if (input == "expert_ids") return cfg.n_experts;
    return 0;
  }

  // The most a correct batch-dependent reduction order may move `stage` of a sequence whose
  // stages are held to `in` (Candidate::batch_order_varies): k x its noise floor, as the chained
  // rule allows it against the oracle. NaN where no floor of the stage is recorded.
  static double floor_limit(const BlockInputs& in, const std::string& stage, DType storage) {
    const auto r = in.ref->find(stage);
    const auto f = in.floor->find(stage);
    if (r == in.ref->end() || f == in.floor->end() || r->second.numel() != f->second.numel()) return NAN;
    const Metrics m = compute_metrics(r->second.view(), f->second.view(), storage, {});
    return kDefaultFloorFactor * floor_of(m.max_abs, storage, rms(r->second.view()));
  }

  // Whether the step produced every output it declared (one that did not stops the run below).
  static bool has_outputs(const KernelStep& ks, const TensorMap& outs) {
    return std::all_of(ks.outputs.begin(), ks.outputs.end(),
                       [&](const std::string& o) { return outs.count(o) > 0; });
  }

  // Judges one sequence's stages of a block in catalog order; a catalog stage the candidate never
  // produced is missing.
  void judge_block(BlockKind kind, int layer, int step, const Seq& q, std::size_t li, const BlockInputs& in,
                   const TensorMap& produced, const std::set<std::string, std::less<>>& filled,
                   const std::vector<KernelStep>& plan, const std::vector<TensorMap>& step_inputs,
                   const TensorMap& honest, const TensorMap& alt) {
    const ModelConfig& cfg = run_.model->config;
    const Mode mode = run_.lanes[li].mode;
    const std::size_t judged_from = s_.report.results.size();
    std::vector<std::string_view> expected;
    if (layer == kModelLayer)
      for (const auto& st : block_stages(kind)) expected.push_back(st.name);
    else
      expected = stages_for(cfg, layer);
    const TensorMap& floor = *in.floor;
    for (std::string_view stage : expected) {
      auto r = in.ref->find(stage);
      if (r == in.ref->end()) continue;
      auto c = produced.find(stage);
      auto f = floor.find(stage);
      auto found = findings_.find(std::make_pair(q.id, std::string(stage)));
      auto h = honest.find(stage), a = alt.find(stage);
      const StageCall call{step,
                           layer,
                           stage,
                           mode,
                           run_.cand->storage_dtype(),
                           r->second,
                           c == produced.end() ? nullptr : &c->second,
                           f == floor.end() ? nullptr : &f->second,
                           q.id,
                           found == findings_.end() ? nullptr : &found->second,
                           h == honest.end() ? nullptr : &h->second,
                           a == alt.end() ? nullptr : &a->second};
      if (filled.count(stage))
        record_filled(s_, call);
      else
        against_.judge(s_, launch_findings_, call);
    }
    // A batched step's inputs are every sequence's: replay re-runs one sequence's steps only.
    if (!s_.features.batch.active())
      capture_failing_inputs(judged_from, plan, step_inputs, step, layer, mode, q.pos, q.T);
  }

  void record_crashed(int step, int layer, const Seq& q, const std::string& stage, Mode mode, DType storage,
                      std::string note) {
    StageResult r;
    r.key = {step, layer, stage, q.id};
    r.mode = mode;
    r.status = Status::crashed;
    r.cand_dtype = storage;
    r.note = std::move(note);
    if (auto it = q.ref.find(stage); it != q.ref.end()) r.shape = it->second.shape();
    s_.record(std::move(r), nullptr, nullptr);
  }

  // A failing stage's step gets its inputs stored, so `driftscope replay` can re-run it alone; with
  // --capture inputs every step does, so replay works on a passing stage too.
  void capture_failing_inputs(std::size_t judged_from, const std::vector<KernelStep>& plan,
                              const std::vector<TensorMap>& step_inputs, int step, int layer, Mode mode,
                              int pos0, int T) {
    if (!s_.trace) return;
    for (std::size_t i = judged_from; i < s_.report.results.size(); ++i) {
      const StageResult& r = s_.report.results[i];
      if (!is_failure(r) && s_.opt.capture != trace::Capture::inputs) continue;
      for (std::size_t k = 0; k < plan.size(); ++k)
        if (std::find(plan[k].outputs.begin(), plan[k].outputs.end(), r.key.stage) != plan[k].outputs.end() &&
            captured_.insert({step, layer, int(mode), plan[k].name}).second)
          s_.trace->append_inputs(step, layer, mode, pos0, T, plan[k].name, plan[k].outputs, step_inputs[k]);
    }
  }

  // Files the launches the step just made under its stages (report and trace).
  // A launch found racing (--race-check) makes every stage of its step a `race`; one with a memcheck
  // finding (--simt-memcheck) makes them `memory`, which wins: the race may be the bad access's.
  // A benign hazard alone (two stores of the same value) is a note on them, no failure.
  void file_launches(const KernelStep& ks, const StepContext& ctx, Mode mode) {
    std::size_t index = 0;
    for (LaunchRecord& l : launch_log::take()) {
      if (!l.memory.empty())
        for (const std::string& o : ks.outputs) {
          auto [it, added] = launch_findings_.try_emplace(
              o, LaunchFinding{Status::memory, launch_log::memory_note(index, ks.name, l)});
          if (!added && (it->second.status != Status::memory || it->second.note_only))
            it->second = {Status::memory, launch_log::memory_note(index, ks.name, l)};
        }
      if (!l.race.empty())
        for (const std::string& o : ks.outputs) {
          auto [it, added] = launch_findings_.try_emplace(
              o, LaunchFinding{Status::race, launch_log::race_note(index, ks.name, l)});
          if (!added && it->second.note_only)
            it->second = {Status::race, launch_log::race_note(index, ks.name, l)};
        }
      for (const std::string& u : l.uninit)
        if (u.starts_with(simt::racecheck_note))
          for (const std::string& o : ks.outputs)
            launch_findings_.try_emplace(
                o, LaunchFinding{Status::pass,
                                 fmt::format("benign hazard (no failure) in launch {} of step {}: {}", index,
                                             ks.name, u.substr(simt::racecheck_note.size())),
                                 true});
      ++index;
      StepLaunch sl{ctx.step, ctx.layer, mode, ks.name, ks.outputs, std::move(l)};
      if (s_.trace) s_.trace->append_launch(sl);
      s_.report.launches.push_back(std::move(sl));
    }
  }

  // One input of a candidate step for one sequence: isolated mode feeds the reference's tensors
  // at the storage dtype, chained mode the lane's own outputs.
  Tensor resolve(const std::string& step, const std::string& name, Seq& q, std::size_t li, int layer,
                 const BlockInputs& in, const TensorMap& produced, DType storage) {
    Lane& lane = q.lanes[li];
    const bool isolated = lane.mode == Mode::isolated;
    if (name == "tokens") return q.tok;
    if (name == "x") return isolated ? in.ref_x->to(storage) : lane.x;
    if (name.rfind("cache:", 0) == 0 || name.rfind("prev:", 0) == 0) {
      const bool is_cache = name[0] == 'c';
      const std::string stage = name.substr(name.find(':') + 1);
      auto& hist = is_cache ? (isolated ? q.ref_cache : lane.cache) : (isolated ? q.ref_prev : lane.prev);
      auto it = hist.find({layer, stage});
      if (it == hist.end()) return Tensor{};
      return it->second.to(storage);
    }
    if (isolated) {
      auto it = in.ref->find(name);
      if (it == in.ref->end())
        throw CandidateCrash(step, fmt::format("reads '{}', which the reference has not", name));
      return it->second.to(storage);
    }
    auto it = produced.find(name);
    if (it == produced.end())
      throw CandidateCrash(step, fmt::format("reads '{}' before any step of its plan produced it", name));
    return it->second;
  }

  void record_history(Seq& q, std::size_t li, int layer, const std::string& stage, const Tensor& t) {
    Lane& lane = q.lanes[li];
    auto key = std::make_pair(layer, stage);
    if (run_.cached.count(stage))
      lane.cache[key] = Tensor::concat_rows(lane.cache.count(key) ? lane.cache[key] : Tensor{}, t);
    lane.latest[key] = t;
  }

  // The token fed after `step`: the reference's greedy choice, or the engine's where its dump says
  // which it chose (its later steps consumed that one). Where the two differ, a note says so with
  // both logits: at a near-tie an engine's rounding legitimately picks the other token.
  int next_token(const Seq& q, int step) {
    const Tensor& logits = q.ref.at("logits");
    const int greedy = ref::Reference::greedy_next(logits);
    const auto& chosen = s_.engine_choices;
    if (q.id != 0 || step >= int(chosen.size())) return greedy;
    const int engine = chosen[std::size_t(step)];
    const std::int64_t V = logits.dim(logits.rank() - 1), last = logits.numel() - V;
    if (engine >= V)
      throw InputError(fmt::format("{}: greedy.txt: token {} after step {} is not below the vocabulary ({})",
                                   s_.opt.candidate, engine, step, V));
    if (engine != greedy)
      s_.report.notes.push_back(fmt::format(
          "step {}: the engine chose token {} where the reference's greedy choice is {} (reference logits "
          "{:.6g} and {:.6g}); the run feeds the engine's choice, which the dump's next steps consumed",
          step, engine, greedy, logits.at(last + engine), logits.at(last + greedy)));
    return engine;
  }

  // The reference's own history feeds isolated mode's cache: and prev: inputs.
  void record_reference(Seq& q, int layer, const TensorMap& rs) {
    for (const auto& [stage, t] : rs) {
      auto key = std::make_pair(layer, stage);
      if (run_.cached.count(stage))
        q.ref_cache[key] = Tensor::concat_rows(q.ref_cache.count(key) ? q.ref_cache[key] : Tensor{}, t);
      q.ref_latest[key] = t;
    }
  }

  // A hidden test hook (DRIFTSCOPE_TEST_KILL_AFTER_LAYERS=N): SIGKILL ourselves after N flushed
  // layers, so the crash-safety test of the trace is deterministic.
  void maybe_test_kill() {
    static const char* env = std::getenv("DRIFTSCOPE_TEST_KILL_AFTER_LAYERS");
    if (env && ++layers_flushed_ >= std::atoi(env)) std::raise(SIGKILL);
  }

  RunState& s_;
  Loaded& run_;
  Yardstick& against_;  // what the stages are held to: the oracle, or the baseline
  std::vector<Seq> seqs_;
  std::vector<SlotMove> slot_plan_;            // the batch's state slots, step by step (empty: one sequence)
  std::set<std::string, std::less<>> states_;  // stages some step reads as prev:
  std::set<std::tuple<int, int, int, std::string>> captured_;  // steps whose inputs are stored
  LaunchFindings launch_findings_;  // this block's stages with a racing or memcheck'd launch: why
  BatchFindings findings_;  // this block's batch-check findings, per sequence and stage
  std::map<BlockKind, std::vector<KernelStep>> plans_;  // plan_of's
  int layers_flushed_ = 0;
};

}  // namespace

void step_loop(RunState& s, Loaded& run) {
  try {
    StepLoop(s, run).go();
  } catch (const CandidateCrash& crash) {
    s.flush();
    s.crash = fmt::format("{} crashed in step '{}': {}", s.crasher(crash), crash.step_name, crash.what());
  } catch (const dump::DumpError& e) {
    s.flush();
    throw InputError(e.what());
  }
}

}  // namespace ds
