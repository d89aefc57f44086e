#include "cpu_candidate.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "cpu_batch.h"
#include "gdn_steps.h"
#include "mat_io.h"
#include "stage_catalog.h"

namespace ds::cpu {

namespace {
const Tensor& in(const TensorMap& inputs, std::string_view name) {
  return input(inputs, name, "cpu candidate");
}
}  // namespace

CandidatePtr CpuCandidate::v1_ops() {
  auto c = std::make_unique<CpuCandidate>();
  c->v1_ = true;
  return c;
}

CandidatePtr CpuCandidate::fill(DType storage) {
  auto c = std::make_unique<CpuCandidate>();
  c->fill_ = true;
  c->storage_ = storage;
  return c;
}

const std::vector<CpuVariant>& planted_variants() {
  static const std::vector<CpuVariant> v = {
      {PlantedBug::segv_at_layer1, "selftest:segv-layer1",
       "harness self-test: cpu-f16 that segfaults in layer 1's attention"},
      {PlantedBug::abort_at_layer1, "selftest:abort-layer1",
       "harness self-test: cpu-f16 that aborts in layer 1's attention"},
      {PlantedBug::hang_at_layer1, "selftest:hang-layer1",
       "harness self-test: cpu-f16 that hangs in layer 1's attention (use --timeout)"},
      {PlantedBug::drift_from_layer3, "mutant:drift-from-layer3",
       "cpu-f16 whose layer output is scaled by 1.01 from layer 3 on: a small systematic error that "
       "compounds"},
      {PlantedBug::residual_scale, "mutant:residual-scale",
       "cpu-f16 whose attention residual (residual_1) is scaled by 1 + 2^-12 at every layer: a bias below "
       "one "
       "f16 ULP per element"},
      {PlantedBug::layernorm_n_minus_1, "mutant:layernorm-n-minus-1",
       "cpu-f16 whose LayerNorms (GPT-2) divide the variance by N - 1 instead of N: a scale of about "
       "1 - 1/(2N) on every output"},
      {PlantedBug::l2norm_no_eps, "mutant:l2norm-no-eps",
       "cpu-f16 whose GDN q/k l2-norm leaves out its epsilon: correct until a head's sum of squares nears "
       "1e-6, where it divides by almost nothing (--probe tiny-gdn-qk)"},
      {PlantedBug::moe_no_renorm, "mutant:moe-no-renorm",
       "cpu-f16 whose MoE routing forgets norm_topk_prob's renormalisation: the chosen experts' weights "
       "sum to less than one (Qwen3-MoE; caught at expert_weights)"},
      {PlantedBug::moe_expert_off_by_one, "mutant:moe-expert-off-by-one",
       "cpu-f16 whose MoE combine reads expert e + 1's weights for chosen expert e: the routing is right, "
       "the output is not (caught at moe_out)"},
      {PlantedBug::moe_rule_swapped, "mutant:moe-rule-swapped",
       "cpu-f16 that routes a softmax-then-top-k model with softmax over the top k (and the reverse): "
       "identical when the chosen weights are renormalised, wrong weights when not (caught at "
       "expert_weights on qwen3moe-unnormed-tiny)"},
      {PlantedBug::moe_shexp_gate_dropped, "mutant:moe-shexp-gate-dropped",
       "cpu-f16 that adds Qwen3-Next's shared expert to the routed output without its sigmoid gate "
       "(caught at ffn_out)"},
      {PlantedBug::moe_shexp_gate_raw, "mutant:moe-shexp-gate-raw",
       "cpu-f16 whose Qwen3-Next shared-expert gate is the raw logit, no sigmoid (caught at shexp_gate)"},
      {PlantedBug::batch_seq_offset, "mutant:batch-seq-offset",
       "cpu-f16 whose batched attention starts each sequence's KV cache one row early: a sequence offset off "
       "by one, reading the last cache row of its neighbour (run --batch)"},
      {PlantedBug::batch_wrong_position, "mutant:batch-wrong-position",
       "cpu-f16 whose batched RoPE rotates each sequence's rows by the next sequence's positions: a position "
       "taken from the wrong sequence (run --batch; decode steps, where positions differ)"},
      {PlantedBug::batch_neighbour_row, "mutant:batch-neighbour-row",
       "cpu-f16 whose batched RMSNorm scales each sequence's last row by the next row's (its neighbour's) "
       "root mean square: a reduction reading one row of its neighbour (run --batch)"},
      {PlantedBug::batch_split_k, "cpu-f16-split-k",
       "cpu-f16 whose dense projections, in a batched call of n sequences, sum each output as n split-K "
       "partial sums (an engine that picks its split by the batch's size): correct, and declared "
       "(Candidate::batch_order_varies), so batch invariance holds it within the noise floor"},
      {PlantedBug::batch_split_k_undeclared, "mutant:batch-order-undeclared",
       "cpu-f16-split-k without its declaration: its batched outputs differ from the same sequence run "
       "alone in the last bit, which the bit-exact batch invariance check names (run --batch)"},
  };
  return v;
}

std::string CpuCandidate::name() const {
  if (fill_) return fmt::format("reference-fill-{}", dtype_name(storage_));
  if (v1_) return "cpu-f16-v1";
  if (bug_ == PlantedBug::none) return "cpu-f16";
  for (const CpuVariant& v : planted_variants())
    if (v.bug == bug_) return v.name;
  return "?";
}

std::string CpuCandidate::description() const {
  if (fill_)
    return fmt::format("the reference fill: cpu-f16's f32 math with every stage output stored as {}",
                       dtype_name(storage_));
  if (v1_)
    return "cpu-f16 limited to a first kernel set's ops (RoPE, GQA, MHA, SwiGLU, RMSNorm): no QK-norm, "
           "no bias";
  if (bug_ == PlantedBug::none)
    return "f32 math with every stage output stored as f16: a correct low-precision implementation of every "
           "family (Qwen3-Next's GDN layers with the plain ops)";
  for (const CpuVariant& v : planted_variants())
    if (v.bug == bug_) return v.what;
  return "?";
}

OpSet CpuCandidate::capabilities() const {
  if (v1_) return {Op::RoPE, Op::RoPENeox, Op::GQA, Op::MHA, Op::CausalMask, Op::SwiGLU, Op::RMSNorm};
  // Every family the reference implements; the GDN ops only in their plain form (a decode step
  // is the same recurrence and conv on one token: no fused decode ops A-D to declare).
  return {Op::RoPE,
          Op::RoPENeox,
          Op::RoPEPartial,
          Op::RoPEFreqFactors,
          Op::GQA,
          Op::MHA,
          Op::CausalMask,
          Op::SwiGLU,
          Op::GeluMlp,
          Op::RMSNorm,
          Op::RMSNormPlusOne,
          Op::LayerNorm,
          Op::BiasAdd,
          Op::QkNorm,
          Op::AbsolutePos,
          Op::AttnOutputGate,
          Op::GatedDeltaNet,
          Op::SsmConv,
          Op::GdnTiledHeads,
          Op::MoeSoftmaxTopK,
          Op::MoeTopKSoftmax,
          Op::MoeNormTopK,
          Op::MoeExperts,
          Op::MoeSharedExpert};
}

std::vector<KernelStep> CpuCandidate::plan(const ModelConfig& cfg, BlockKind kind) const {
  const std::vector<KernelStep> mlp = {{"ffn_norm", {"residual_1"}, {"ffn_norm"}},
                                       {"gate_up", {"ffn_norm"}, {"gate", "up"}},
                                       {"swiglu", {"gate", "up"}, {"ffn_act"}},
                                       {"down", {"ffn_act"}, {"down"}},
                                       {"residual_2", {"residual_1", "down"}, {"residual_2"}}};
  std::vector<KernelStep> p;
  switch (kind) {
    case BlockKind::embed: return {{"embed", {"tokens"}, {"embed"}}};
    case BlockKind::head:
      return {{cfg.family == Family::gpt2 ? "ln_f" : "final_norm", {"x"}, {"final_norm"}},
              {"lm_head", {"final_norm"}, {"logits"}}};
    case BlockKind::gpt2:
      return {{"ln_1", {"x"}, {"ln_1"}},
              {"c_attn", {"ln_1"}, {"qkv"}},
              {"attention_qkv", {"qkv", "cache:qkv"}, {"attn"}},
              {"o_proj", {"attn"}, {"attn_out"}},
              {"residual_1", {"x", "attn_out"}, {"residual_1"}},
              {"ln_2", {"residual_1"}, {"ln_2"}},
              {"c_fc", {"ln_2"}, {"fc"}},
              {"gelu", {"fc"}, {"gelu"}},
              {"mlp_proj", {"gelu"}, {"proj"}},
              {"residual_2", {"residual_1", "proj"}, {"residual_2"}}};
    case BlockKind::gdn:
      p = gdn_steps_to_gated_norm();
      p.push_back({"out_proj", {"gated_norm"}, {"out_proj"}});
      p.push_back({"residual_1", {"x", "out_proj"}, {"residual_1"}});
      break;
    case BlockKind::decoder:
    case BlockKind::gated_attn: {
      // Gated attention: q_proj also yields the gate, which scales the attention output.
      const bool gated = kind == BlockKind::gated_attn;
      p = {{"attn_norm", {"x"}, {"attn_norm"}},
           gated ? KernelStep{"q_proj", {"attn_norm"}, {"q", "attn_gate", "k", "v"}}
                 : KernelStep{"qkv", {"attn_norm"}, {"q", "k", "v"}}};
      std::string q = "q", k = "k";
      if (cfg.qk_norm) {
        p.push_back({"q_norm", {"q"}, {"q_norm"}});
        p.push_back({"k_norm", {"k"}, {"k_norm"}});
        q = "q_norm";
        k = "k_norm";
      }
      p.push_back({"rope_q", {q}, {"q_rope"}});
      p.push_back({"rope_k", {k}, {"k_rope"}});
      p.push_back({"attention", {"q_rope", "cache:k_rope", "cache:v"}, {"attn"}});
      if (gated) p.push_back({"attn_gate_mul", {"attn", "attn_gate"}, {"attn_gated"}});
      p.push_back({"o_proj", {gated ? "attn_gated" : "attn"}, {"attn_out"}});
      p.push_back({"residual_1", {"x", "attn_out"}, {"residual_1"}});
      break;
    }
    default: return {};  // not supported: the capability gate refuses such models first
  }
  if (cfg.moe()) {
    const std::vector<KernelStep> experts = moe_steps(cfg.shared_expert());
    p.insert(p.end(), experts.begin(), experts.end());
    return p;
  }
  p.insert(p.end(), mlp.begin(), mlp.end());
  return p;
}

void CpuCandidate::load(const ModelConfig& cfg, const WeightStore& weights) {
  cfg_ = cfg;
  w_.clear();
  vec_.clear();
  // In place (the store outlives the candidate's runs): no copy of the model's matrices.
  for (const auto& [name, t] : weights.all()) {
    w_.emplace(name, WeightMat(t));
    if (t.rank() == 1) vec_.emplace(name, to_mat(t).v);
  }
  for (const auto& [name, q] : weights.quantized()) w_.emplace(name, WeightMat(q));
}

const WeightMat& CpuCandidate::w(int layer, std::string_view role) const {
  const std::string n = layer == kModelLayer ? std::string(role) : layer_weight(layer, role);
  auto it = w_.find(n);
  if (it == w_.end()) throw std::out_of_range(fmt::format("cpu candidate: weight '{}' not loaded", n));
  return it->second;
}

const std::vector<float>& CpuCandidate::vec(int layer, std::string_view role) const {
  const std::string n = layer == kModelLayer ? std::string(role) : layer_weight(layer, role);
  auto it = vec_.find(n);
  if (it == vec_.end())
    throw std::out_of_range(fmt::format("cpu candidate: vector weight '{}' not loaded", n));
  return it->second;
}

std::vector<float> CpuCandidate::norm_w(int layer, std::string_view role) const {
  std::vector<float> v = vec(layer, role);
  if (cfg_.norm_plus_one)
    for (float& e : v) e += 1.0f;  // Qwen3-Next's (1 + w), applied in f32 as HF does
  return v;
}

std::span<const float> CpuCandidate::b(int layer, std::string_view role) const {
  auto it = vec_.find(layer_weight(layer, role));
  return it == vec_.end() ? std::span<const float>{} : std::span<const float>(it->second);
}

void CpuCandidate::crash_if_planted() const {
  switch (bug_) {
    case PlantedBug::segv_at_layer1: {
      volatile int* p = nullptr;
      *p = 1;
      break;
    }
    case PlantedBug::abort_at_layer1: std::abort();
    case PlantedBug::hang_at_layer1:
      for (;;) pause();
    default: break;
  }
}

int CpuCandidate::cache_start(const SeqSpan& q) const {
  // The planted bug: every sequence after the first starts one row early, in its neighbour's rows.
  return bug_ == PlantedBug::batch_seq_offset && q.cache_row0 > 0 ? q.cache_row0 - 1 : q.cache_row0;
}

int CpuCandidate::position_of(const StepContext& ctx, const SeqSpan& q) const {
  if (bug_ != PlantedBug::batch_wrong_position || ctx.seqs.size() < 2) return q.pos0;
  // The planted bug: the next sequence's first position.
  for (std::size_t i = 0; i < ctx.seqs.size(); ++i)
    if (ctx.seqs[i].row0 == q.row0) return ctx.seqs[(i + 1) % ctx.seqs.size()].pos0;
  return q.pos0;
}

void CpuCandidate::plant_neighbour_row(const StepContext& ctx, const Mat& x, const std::vector<float>& w,
                                       Mat& y) const {
  // The planted bug: each sequence's last row (but the batch's last) is scaled by the root mean
  // square of the row after it, the first row of the next sequence.
  for (std::size_t i = 0; i + 1 < ctx.seqs.size(); ++i) {
    const std::int64_t row = ctx.seqs[i].row0 + ctx.seqs[i].n_tokens - 1, next = row + 1;
    double ss = 0;
    for (std::int64_t j = 0; j < x.cols; ++j) ss += double(x.row(next)[j]) * x.row(next)[j];
    const float scale = 1.0f / std::sqrt(float(ss / double(x.cols)) + float(cfg_.norm_eps));
    for (std::int64_t j = 0; j < x.cols; ++j) y.row(row)[j] = x.row(row)[j] * scale * w[std::size_t(j)];
  }
}

Mat CpuCandidate::project(const StepContext& ctx, const Mat& x, const WeightMat& w,
                          std::span<const float> bias) const {
  const bool split = bug_ == PlantedBug::batch_split_k || bug_ == PlantedBug::batch_split_k_undeclared;
  return split && ctx.seqs.size() > 1 ? linear_split_k(x, w, bias, int(ctx.seqs.size())) : linear(x, w, bias);
}

void CpuCandidate::run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                       TensorMap& outputs) {
  const auto& c = cfg_;
  const int l = ctx.layer;
  const std::string& s = step.name;
  auto x = [&](std::string_view n) { return to_mat(in(inputs, n)); };
  auto out = [&](std::string_view n, const Mat& m) { outputs[std::string(n)] = to_tensor(m, storage_); };
  if (run_hybrid(step, ctx, inputs, outputs)) {
    // a Qwen3-Next step (cpu_hybrid.cpp)
  } else if (run_moe(step, ctx, inputs, outputs)) {
    // a mixture-of-experts step (cpu_moe.cpp)
  } else if (s == "embed") {
    const Tensor& tok = in(inputs, "tokens");
    const WeightMat& table = w(kModelLayer, "token_embd.weight");
    std::vector<float> scratch;
    Mat e(tok.numel(), table.cols);
    for (std::int64_t t = 0; t < tok.numel(); ++t) {
      const auto id = std::int64_t(tok.at(t));
      if (id < 0 || id >= table.rows)
        throw std::out_of_range(fmt::format("token id {} outside the vocabulary", id));
      std::copy_n(table.row(id, scratch), table.cols, e.row(t));
    }
    // GPT-2's learned absolute positions: a sequence's token t sits at its position pos0 + t.
    if (auto pos = w_.find("position_embd.weight"); pos != w_.end()) {
      const WeightMat& p = pos->second;
      e = map_seqs(ctx, e, [&](const SeqSpan& q, const Mat& rows) {
        Mat r = rows;
        if (q.pos0 + r.rows > p.rows)
          throw std::out_of_range(
              fmt::format("position {} beyond the {} learned positions", q.pos0 + r.rows - 1, p.rows));
        for (std::int64_t t = 0; t < r.rows; ++t) {
          const float* pr = p.row(q.pos0 + t, scratch);
          for (std::int64_t i = 0; i < r.cols; ++i) r.row(t)[i] += pr[i];
        }
        return r;
      });
    }
    out("embed", e);
  } else if (s == "ln_f" || s == "ln_1" || s == "ln_2") {
    // GPT-2's LayerNorms: ln_f is output_norm, ln_1 attn_norm, ln_2 ffn_norm (GGUF names).
    const int layer = s == "ln_f" ? kModelLayer : l;
    const std::string_view role = s == "ln_f" ? "output_norm" : s == "ln_1" ? "attn_norm" : "ffn_norm";
    const int ddof = bug_ == PlantedBug::layernorm_n_minus_1 ? 1 : 0;  // the planted bug: N - 1
    out(step.outputs[0], layernorm(x(step.inputs[0]), vec(layer, fmt::format("{}.weight", role)),
                                   vec(layer, fmt::format("{}.bias", role)), float(c.norm_eps), ddof));
  } else if (s == "c_attn" || s == "c_fc") {
    const std::string_view role = s == "c_attn" ? "attn_qkv" : "ffn_up";
    out(step.outputs[0], project(ctx, x(step.inputs[0]), w(l, fmt::format("{}.weight", role)),
                                 vec(l, fmt::format("{}.bias", role))));
  } else if (s == "attention_qkv") {
    // GPT-2: q, k and v are the column ranges [0, Q), [Q, Q + KV), [Q + KV, Q + 2 KV) of c_attn.
    if (l == 1) crash_if_planted();
    const Mat qkv = x("qkv"), cache = x("cache:qkv");
    const std::int64_t Q = c.q_dim(), KV = c.kv_dim();
    out("attn", map_seqs(ctx, qkv, [&](const SeqSpan& q, const Mat& rows) {
          // Each sequence attends to its own cache rows only.
          const Mat own = row_range(cache, cache_start(q), q.pos0 + q.n_tokens);
          return attention(columns(rows, 0, Q), columns(own, Q, KV), columns(own, Q + KV, KV), c.n_heads,
                           c.n_kv_heads, c.head_dim, q.pos0);
        }));
  } else if (s == "gelu") {
    out("gelu", gelu_tanh(x("fc")));
  } else if (s == "mlp_proj") {
    out("proj", project(ctx, x("gelu"), w(l, "ffn_down.weight"), vec(l, "ffn_down.bias")));
  } else if (s == "final_norm") {
    out("final_norm",
        rmsnorm(x("x"), norm_w(kModelLayer, "output_norm.weight"), float(c.norm_eps), c.hidden));
  } else if (s == "lm_head") {
    auto it = w_.find("output.weight");
    out("logits",
        project(ctx, x("final_norm"), it != w_.end() ? it->second : w(kModelLayer, "token_embd.weight"), {}));
  } else if (s == "attn_norm" || s == "ffn_norm") {
    const Mat in_rows = x(s == "attn_norm" ? "x" : "residual_1");
    const std::vector<float> nw = norm_w(l, fmt::format("{}.weight", s));
    Mat y = rmsnorm(in_rows, nw, float(c.norm_eps), c.hidden);
    if (bug_ == PlantedBug::batch_neighbour_row) plant_neighbour_row(ctx, in_rows, nw, y);
    out(s, y);
  } else if (s == "qkv") {
    const Mat a = x("attn_norm");
    out("q", project(ctx, a, w(l, "attn_q.weight"), b(l, "attn_q.bias")));
    out("k", project(ctx, a, w(l, "attn_k.weight"), b(l, "attn_k.bias")));
    out("v", project(ctx, a, w(l, "attn_v.weight"), b(l, "attn_v.bias")));
  } else if (s == "q_norm" || s == "k_norm") {
    out(s, rmsnorm(x(s == "q_norm" ? "q" : "k"), norm_w(l, fmt::format("attn_{}.weight", s)),
                   float(c.norm_eps), c.head_dim));
  } else if (s == "rope_q" || s == "rope_k") {
    out(step.outputs[0], map_seqs(ctx, x(step.inputs[0]), [&](const SeqSpan& q, const Mat& rows) {
          return rope(rows, c.head_dim, c.rotary_dim(), position_of(ctx, q), float(c.rope_theta), c.rope_mode,
                      c.rope_freq_factors);
        }));
  } else if (s == "attention") {
    if (l == 1) crash_if_planted();
    const Mat k_cache = x("cache:k_rope"), v_cache = x("cache:v");
    out("attn", map_seqs(ctx, x("q_rope"), [&](const SeqSpan& q, const Mat& rows) {
          const std::int64_t n = q.pos0 + q.n_tokens;  // each sequence attends to its own cache rows only
          return attention(rows, row_range(k_cache, cache_start(q), n), row_range(v_cache, cache_start(q), n),
                           c.n_heads, c.n_kv_heads, c.head_dim, q.pos0);
        }));
  } else if (s == "o_proj") {
    out("attn_out", project(ctx, x(step.inputs[0]), w(l, "attn_output.weight"), b(l, "attn_output.bias")));
  } else if (s == "residual_1") {
    Mat r1 = add(x(step.inputs[0]), x(step.inputs[1]));
    if (bug_ == PlantedBug::residual_scale)
      for (float& v : r1.v) v *= 1.0f + 0x1p-12f;  // the planted bug
    out("residual_1", r1);
  } else if (s == "gate_up") {
    const Mat a = x("ffn_norm");
    out("gate", project(ctx, a, w(l, "ffn_gate.weight"), b(l, "ffn_gate.bias")));
    out("up", project(ctx, a, w(l, "ffn_up.weight"), b(l, "ffn_up.bias")));
  } else if (s == "swiglu") {
    out("ffn_act", silu_mul(x("gate"), x("up")));
  } else if (s == "down") {
    out("down", project(ctx, x("ffn_act"), w(l, "ffn_down.weight"), b(l, "ffn_down.bias")));
  } else if (s == "residual_2") {
    Mat r2 = add(x(step.inputs[0]), x(step.inputs[1]));
    if (bug_ == PlantedBug::drift_from_layer3 && l >= 3)
      for (float& v : r2.v) v *= 1.01f;
    out("residual_2", r2);
  } else {
    throw std::logic_error(fmt::format("cpu candidate: unknown step '{}'", s));
  }
}

}  // namespace ds::cpu
