// Phase 4, the step loop (phases.h): for every model step (the prefill, then each decode step)
// the reference runs embed, every layer and the head; every lane runs the candidate's plan for
// the same block, and each catalog stage is judged against the run's yardstick and streamed
// into the trace, flushed once per layer.
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "dump_run.h"
#include "judge_stage.h"
#include "launch_log.h"
#include "moe_ties.h"
#include "phases.h"
#include "stage_catalog.h"

namespace ds {

namespace {

// The values of `x` once stored in `t`, kept as f64 (what the floor reference consumes).
Tensor round_values(const Tensor& x, DType t) { return x.to(t).to(DType::f64); }

// The inputs of one block's steps: the step's tokens, the reference's stages and input.
struct BlockInputs {
  const TensorMap& ref;    // the reference's stages of this block
  const TensorMap& floor;  // the noise floor's
  const Tensor* tokens;
  const Tensor& ref_x;  // the reference's input to the block
};

class StepLoop {
 public:
  StepLoop(RunState& s, Loaded& run) : s_(s), run_(run), against_(s.features.yardstick()) {}

  void go() {
    Candidate& cand = *run_.cand;
    const ModelConfig& cfg = run_.model->config;
    ref::Reference& reference = *run_.oracle;
    const DType storage = cand.storage_dtype();
    int pos0 = 0;
    for (int step = 0; step <= s_.opt.decode_steps; ++step) {
      const std::vector<int> step_tokens =
          step == 0 ? run_.tokens : std::vector<int>{s_.report.tokens.back()};
      const int T = int(step_tokens.size());
      const bool judged = LateStart::judged(s_.opt, step);
      // What was this step's output becomes the previous step's for recurrent inputs.
      ref_prev_ = std::exchange(ref_latest_, {});
      for (auto& lane : run_.lanes) lane.prev = std::exchange(lane.latest, {});
      Tensor tok(DType::i32, {T});
      for (int i = 0; i < T; ++i) tok.set(i, step_tokens[std::size_t(i)]);
      std::vector<std::int32_t> tok32(step_tokens.begin(), step_tokens.end());

      // Model-level: embed.
      TensorMap ref_stages = reference.embed(tok32, pos0);
      for (auto& lane : run_.lanes) {
        if (!judged) continue;
        const TensorMap fs = lane.floor->embed(tok32, pos0);
        TensorMap outs = run_block(BlockKind::embed, kModelLayer, step, pos0, T, lane,
                                   {ref_stages, fs, &tok, ref_stages.at("embed")});
        DumpFeature::stand_in_embed(cand, outs, ref_stages.at("embed"));
        auto e = outs.find("embed");
        if (e == outs.end()) throw CandidateCrash("embed", "the plan's embed block did not produce 'embed'");
        lane.x = e->second;
        lane.floor_x = fs.at("embed");
      }
      Tensor ref_x = ref_stages.at("embed");
      for (auto& lane : run_.lanes)
        if (lane.own_oracle) lane.own_x = ref_x;  // the embedding has no state: the same on every path
      s_.flush();
      for (int l = 0; l < cfg.n_layers; ++l) {
        s_.event("reference_layer");
        TensorMap rs = reference.layer(l, ref_x, pos0);
        record_reference(l, rs);
        for (auto& lane : run_.lanes) {
          const bool isolated = lane.mode == Mode::isolated;
          const Tensor floor_in = isolated ? round_values(ref_x, storage) : lane.floor_x;
          const TensorMap forced =
              isolated ? step_inputs_as_given(cfg.block_kind(l), rs, storage) : TensorMap{};
          const TensorMap fs = lane.floor->layer(l, floor_in, pos0, isolated ? &forced : nullptr);
          lane.floor_x = fs.at("residual_2");
          if (!judged) continue;
          // A chained lane that took a legitimate near-tie choice the oracle did not follows its own
          // copy of the oracle from there on (settle_moe_tie), given that choice.
          TensorMap own;
          Tensor own_in;
          if (lane.own_oracle) {
            own_in = lane.own_x;
            own = lane.own_oracle->layer(l, own_in, pos0);
            lane.own_x = own.at("residual_2");  // settle_moe_tie replaces it after a further flip
          }
          const TensorMap& lane_rs = lane.own_oracle ? own : rs;
          const Tensor& lane_ref_x = lane.own_oracle ? own_in : ref_x;
          TensorMap outs =
              run_block(cfg.block_kind(l), l, step, pos0, T, lane, {lane_rs, fs, &tok, lane_ref_x});
          auto it = outs.find("residual_2");
          // A candidate that does not produce the layer output cannot continue its own chain.
          lane.x = it != outs.end() ? it->second : lane_rs.at("residual_2").to(storage);
        }
        ref_x = rs.at("residual_2");
        s_.flush();
        maybe_test_kill();
      }
      // A step nobody judges needs only its last row's logits (the next token): a 2050-token
      // prefill before --from-step would otherwise hold [2050, vocab] doubles for nothing.
      TensorMap hs = reference.head(judged ? ref_x : ref_x.rows(T - 1, T));
      for (auto& lane : run_.lanes) {
        if (!judged) continue;
        const bool isolated = lane.mode == Mode::isolated;
        const TensorMap forced = isolated ? step_inputs_as_given(BlockKind::head, hs, storage) : TensorMap{};
        const TensorMap fs = lane.floor->head(isolated ? round_values(ref_x, storage) : lane.floor_x,
                                              isolated ? &forced : nullptr);
        const TensorMap own_hs = lane.own_oracle ? lane.own_oracle->head(lane.own_x) : TensorMap{};
        const TensorMap& lane_hs = lane.own_oracle ? own_hs : hs;
        const TensorMap outs = run_block(BlockKind::head, kModelLayer, step, pos0, T, lane,
                                         {lane_hs, fs, &tok, lane.own_oracle ? lane.own_x : ref_x});
        const Tensor* held_to = against_.logits(lane_hs);
        if (!held_to) continue;  // nothing to hold the logits against
        if (auto it = outs.find("logits"); it != outs.end())
          note_logits(s_.report, lane.mode, step, *held_to, it->second);
      }
      s_.flush();
      s_.report.tokens.push_back(ref::Reference::greedy_next(hs.at("logits")));
      pos0 += T;
    }
    s_.report.tokens.pop_back();  // the token after the last step was never fed
  }

 private:
  // The reference's stages that the candidate's kernel steps of this block read, as isolated
  // mode hands them over (rounded to storage). The isolated floor consumes these too, so each
  // stage's floor is what its own kernel step adds, not a chain of rounding through the layer
  // (which realises a different input perturbation than the candidate's: at large scores the
  // two diverge by more than the statistical limit allows).
  // A `cache:X` input is the reference's X of every step so far, so the floor's cache takes its X.
  // (A `prev:` state is not forced: the floor carries its own recurrent state.)
  TensorMap step_inputs_as_given(BlockKind kind, const TensorMap& ref, DType storage) const {
    TensorMap given;
    for (const KernelStep& ks : run_.cand->plan(run_.model->config, kind))
      for (std::string_view name : ks.inputs) {
        if (name.starts_with("cache:")) name.remove_prefix(6);
        if (auto it = ref.find(name); it != ref.end() && !given.count(name))
          given[std::string(name)] = round_values(it->second, storage);
      }
    return given;
  }

  // Runs the candidate's plan for one block in one lane and judges every catalog stage.
  TensorMap run_block(BlockKind kind, int layer, int step, int pos0, int T, Lane& lane,
                      const BlockInputs& given) {
    // What the block's stages are held to and its isolated steps are fed: the oracle's stages, or
    // after a legitimate near-tie in a MoE router, the oracle's given the candidate's choice.
    std::unique_ptr<TieInputs> tie;
    const BlockInputs* cur = &given;
    Candidate& cand = *run_.cand;
    const ModelConfig& cfg = run_.model->config;
    const DType storage = cand.storage_dtype();
    TensorMap produced;
    std::set<std::string, std::less<>> filled;  // stages a fill step computed
    StepContext ctx{&cfg, step, layer, pos0, T};
    const std::vector<KernelStep> plan = cand.plan(cfg, kind);
    std::vector<TensorMap> step_inputs;  // kept to capture the inputs of failing steps
    races_.clear();
    for (const KernelStep& ks : plan) {
      const BlockInputs& in = *cur;
      TensorMap& inputs = step_inputs.emplace_back();
      for (const std::string& name : ks.inputs)
        inputs[name] = resolve(ks.name, name, lane, layer, in, produced, storage);
      TensorMap outs;
      try {
        s_.event("candidate_step");
        cand.run(ks, ctx, inputs, outs);
        file_launches(ks, ctx, lane.mode);
      } catch (const CandidateCrash& crash) {
        // The stage it was in is crashed; everything judged before stays in the report and trace.
        for (const std::string& o : ks.outputs)
          record_crashed(step, layer, o, lane.mode, storage, in.ref,
                         fmt::format("{}: {}", ks.name, crash.what()));
        if (s_.trace) s_.trace->append_inputs(step, layer, lane.mode, pos0, T, ks.name, ks.outputs, inputs);
        throw;
      }
      for (const std::string& o : ks.outputs) {
        auto it = outs.find(o);
        if (it == outs.end()) {
          // A broken contract stops the run like a crash: the stage is recorded, nothing aborts.
          record_crashed(step, layer, o, lane.mode, storage, in.ref,
                         fmt::format("{}: declared '{}' as an output but did not produce it", ks.name, o));
          throw CandidateCrash(ks.name, fmt::format("did not produce its declared output '{}'", o));
        }
        if (FillFeature::fills(ks)) filled.insert(o);
        record_history(lane, layer, o, it->second);
        produced[o] = std::move(it->second);
      }
      if (!tie && cfg.moe() && kind != BlockKind::gpt2 && produced.count("expert_ids"))
        if ((tie = settle_moe_tie(step, layer, lane, in, produced.at("expert_ids")))) cur = &tie->inputs;
    }
    const BlockInputs& in = *cur;
    // The yardstick's own run of this block on the same inputs (--baseline), if it has one.
    against_.block_ran(s_, {kind, step, layer, pos0, T, lane.mode, in.ref},
                       [&](const std::string& st, const std::string& name, DType dt) {
                         return resolve(st, name, lane, layer, in, produced, dt);
                       });
    // Judge in catalog order; a catalog stage the candidate never produced is missing.
    const std::size_t judged_from = s_.report.results.size();
    std::vector<std::string_view> expected;
    if (layer == kModelLayer)
      for (const auto& st : block_stages(kind)) expected.push_back(st.name);
    else
      expected = stages_for(cfg, layer);
    for (std::string_view stage : expected) {
      auto r = in.ref.find(stage);
      if (r == in.ref.end()) continue;
      auto c = produced.find(stage);
      auto f = in.floor.find(stage);
      const StageCall call{step,
                           layer,
                           stage,
                           lane.mode,
                           storage,
                           r->second,
                           c == produced.end() ? nullptr : &c->second,
                           f == in.floor.end() ? nullptr : &f->second};
      if (filled.count(stage))
        record_filled(s_, call);
      else
        against_.judge(s_, races_, call);
    }
    capture_failing_inputs(judged_from, plan, step_inputs, step, layer, lane.mode, pos0, T);
    return produced;
  }

  // The reference and floor stages of a MoE layer given other expert ids, and the inputs over them.
  struct TieInputs {
    TensorMap ref, floor;
    BlockInputs inputs;
    TieInputs(TensorMap r, TensorMap f, const BlockInputs& in)
        : ref(std::move(r)), floor(std::move(f)), inputs{ref, floor, in.tokens, in.ref_x} {}
    TieInputs(const TieInputs&) = delete;
  };

  // Where the candidate's expert_ids differ from the oracle's only at near-ties of the oracle's
  // router logits (moe_ties.h): notes each such row and returns the oracle's (and the noise
  // floor's) stages given the candidate's choice. The floor's own choice is brought to the judged
  // one too, so a flip of the floor itself never widens a tolerance.
  std::unique_ptr<TieInputs> settle_moe_tie(int step, int layer, Lane& lane, const BlockInputs& in,
                                            const Tensor& cand_ids) {
    const ModelConfig& cfg = run_.model->config;
    auto r = in.ref.find("expert_ids");
    auto rl = in.ref.find("router_logits");
    if (r == in.ref.end() || rl == in.ref.end()) return nullptr;
    const auto fl = in.floor.find("router_logits");
    const auto check = legitimate_tie_flips(cfg, rl->second, fl == in.floor.end() ? nullptr : &fl->second,
                                            r->second, cand_ids, run_.cand->storage_dtype());
    const Tensor& judged = check ? check->ids : r->second;
    const auto fi = in.floor.find("expert_ids");
    const bool floor_differs = fi != in.floor.end() && lane.floor &&
                               fi->second.to(DType::f64).to_f64() != judged.to(DType::f64).to_f64();
    if (!check && !floor_differs) return nullptr;
    if (check)
      for (const TieFlip& f : check->flips)
        s_.report.notes.push_back(tie_note(f, cfg, step, layer, lane.mode, rl->second));
    // A chained lane carries its choice into the layers after: from here on it follows its own copy
    // of the oracle, taken now (this layer's state included), given that choice.
    if (check && lane.mode == Mode::chained && !lane.own_oracle)
      lane.own_oracle = std::make_unique<ref::Reference>(*run_.oracle);
    const ref::Reference& oracle = lane.own_oracle ? *lane.own_oracle : *run_.oracle;
    TensorMap ref = check ? oracle.moe_given_ids(layer, in.ref, judged) : in.ref;
    if (check && lane.own_oracle) lane.own_x = ref.at("residual_2");
    TensorMap floor = floor_differs ? lane.floor->moe_given_ids(layer, in.floor, judged) : in.floor;
    return std::make_unique<TieInputs>(std::move(ref), std::move(floor), in);
  }

  void record_crashed(int step, int layer, const std::string& stage, Mode mode, DType storage,
                      const TensorMap& ref, std::string note) {
    StageResult r;
    r.key = {step, layer, stage};
    r.mode = mode;
    r.status = Status::crashed;
    r.cand_dtype = storage;
    r.note = std::move(note);
    if (auto it = ref.find(stage); it != ref.end()) r.shape = it->second.shape();
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
  // A launch found racing (--race-check) makes every stage of its step a `race`.
  void file_launches(const KernelStep& ks, const StepContext& ctx, Mode mode) {
    std::size_t index = 0;
    for (LaunchRecord& l : launch_log::take()) {
      if (!l.race.empty())
        for (const std::string& o : ks.outputs)
          races_.try_emplace(o, launch_log::race_note(index, ks.name, l));
      ++index;
      StepLaunch sl{ctx.step, ctx.layer, mode, ks.name, ks.outputs, std::move(l)};
      if (s_.trace) s_.trace->append_launch(sl);
      s_.report.launches.push_back(std::move(sl));
    }
  }

  // One input of a candidate step: isolated mode feeds the reference's tensors at the storage
  // dtype, chained mode the lane's own outputs.
  Tensor resolve(const std::string& step, const std::string& name, Lane& lane, int layer,
                 const BlockInputs& in, const TensorMap& produced, DType storage) {
    const bool isolated = lane.mode == Mode::isolated;
    if (name == "tokens") return *in.tokens;
    if (name == "x") return isolated ? in.ref_x.to(storage) : lane.x;
    if (name.rfind("cache:", 0) == 0 || name.rfind("prev:", 0) == 0) {
      const bool is_cache = name[0] == 'c';
      const std::string stage = name.substr(name.find(':') + 1);
      auto& hist = is_cache ? (isolated ? ref_cache_ : lane.cache) : (isolated ? ref_prev_ : lane.prev);
      auto it = hist.find({layer, stage});
      if (it == hist.end()) return Tensor{};
      return it->second.to(storage);
    }
    if (isolated) {
      auto it = in.ref.find(name);
      if (it == in.ref.end())
        throw CandidateCrash(step, fmt::format("reads '{}', which the reference has not", name));
      return it->second.to(storage);
    }
    auto it = produced.find(name);
    if (it == produced.end())
      throw CandidateCrash(step, fmt::format("reads '{}' before any step of its plan produced it", name));
    return it->second;
  }

  void record_history(Lane& lane, int layer, const std::string& stage, const Tensor& t) {
    auto key = std::make_pair(layer, stage);
    if (run_.cached.count(stage))
      lane.cache[key] = Tensor::concat_rows(lane.cache.count(key) ? lane.cache[key] : Tensor{}, t);
    lane.latest[key] = t;
  }

  // The reference's own history feeds isolated mode's cache: and prev: inputs.
  void record_reference(int layer, const TensorMap& rs) {
    for (const auto& [stage, t] : rs) {
      auto key = std::make_pair(layer, stage);
      if (run_.cached.count(stage))
        ref_cache_[key] = Tensor::concat_rows(ref_cache_.count(key) ? ref_cache_[key] : Tensor{}, t);
      ref_latest_[key] = t;
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
  StageHistory ref_cache_, ref_prev_, ref_latest_;
  std::set<std::tuple<int, int, int, std::string>> captured_;  // steps whose inputs are stored
  Races races_;                                                // this block's racing stages: why
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
