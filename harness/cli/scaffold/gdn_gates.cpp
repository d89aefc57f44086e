// @CANDIDATE@: a Driftscope candidate whose Gated DeltaNet gates (the beta and g stages of a
// Qwen3.5 / Qwen3-Next linear-attention layer: the in_proj_b and in_proj_a projections of the
// normed input with their activations) come from the kernel in gdn_gates.cu. Run it with `--fill
// reference` and Driftscope computes every other stage of the model, so this one kernel is judged
// inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// gdn_gates.cu: beta[t, h] = sigmoid(Wb[h, :] . x[t, :]) and
// g[t, h] = a_neg[h] * softplus(Wa[h, :] . x[t, :] + dt_bias[h]); x [tokens, hidden], Wb and Wa
// [v_heads, hidden], a_neg and dt_bias [v_heads], beta and g [tokens, v_heads]. Host pointers.
void @ENTRY@(float* beta, float* g, const float* x, const float* Wb, const float* Wa, const float* a_neg,
              const float* dt_bias, int tokens, int hidden, int v_heads);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class GdnGatesCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "GDN gates (beta, g) from gdn_gates.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {}; }  // the stage exercises no op of the catalog

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::gdn) return {};
    return {{"gdn_gates", {"attn_norm"}, {"beta", "g"}}};
  }

  // Per GDN layer, as f32; empty for the full-attention layers.
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    layers_.assign(static_cast<std::size_t>(cfg.n_layers), {});
    for (int l = 0; l < cfg.n_layers; ++l) {
      if (weights.find_layer(l, "ssm_beta.weight") == nullptr) continue;
      Layer& w = layers_[static_cast<std::size_t>(l)];
      w.wb = to_f32(weights.layer(l, "ssm_beta.weight"));
      w.wa = to_f32(weights.layer(l, "ssm_alpha.weight"));
      w.a_neg = to_f32(weights.layer(l, "ssm_a"));
      w.dt_bias = to_f32(weights.layer(l, "ssm_dt.bias"));
    }
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const int T = ctx.n_tokens, D = cfg_.hidden, H = cfg_.gdn_v_heads;
    const std::vector<float> x = to_f32(inputs.at("attn_norm"));
    const Layer& w = layers_[static_cast<std::size_t>(ctx.layer)];
    if (x.size() != std::size_t(T) * D || w.wb.size() != std::size_t(H) * D ||
        w.wa.size() != std::size_t(H) * D || w.a_neg.size() != std::size_t(H) || w.dt_bias.size() != std::size_t(H))
      throw std::runtime_error(fmt::format(
          "{}: attn_norm/ssm_beta/ssm_alpha/ssm_a/ssm_dt.bias have {}/{}/{}/{}/{} values, expected {} x {}, "
          "{} x {} twice and {} twice",
          step.name, x.size(), w.wb.size(), w.wa.size(), w.a_neg.size(), w.dt_bias.size(), T, D, H, D, H));
    const std::size_t n = std::size_t(T) * H;
    std::vector<float> beta(n), g(n);
    @ENTRY@(beta.data(), g.data(), x.data(), w.wb.data(), w.wa.data(), w.a_neg.data(), w.dt_bias.data(), T, D, H);
    for (const auto& [name, v] : {std::pair{"beta", &beta}, std::pair{"g", &g}}) {
      ds::Tensor out(storage_dtype(), {T, H});
      for (std::size_t i = 0; i < n; ++i) out.set(static_cast<std::int64_t>(i), (*v)[i]);
      outputs[name] = std::move(out);
    }
  }

 private:
  struct Layer {
    std::vector<float> wb, wa, a_neg, dt_bias;
  };
  ds::ModelConfig cfg_;
  std::vector<Layer> layers_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new GdnGatesCandidate; }})
