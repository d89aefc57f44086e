// @CANDIDATE@: a Driftscope candidate whose QK-norm stages (q_norm, k_norm: an RMSNorm of each
// head of q and k before RoPE, as Qwen3 has) come from the kernel in qk_norm.cu. Run it with
// `--fill reference` and Driftscope computes every other stage of the model, so this one kernel is
// judged inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// qk_norm.cu: out[t, h, :] = x[t, h, :] / sqrt(mean(x[t, h, :]^2) + eps) * w, w [head_dim] shared
// by every head; x and out [tokens, heads * head_dim], host pointers.
void @ENTRY@(float* out, const float* x, const float* w, int tokens, int heads, int head_dim, float eps);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class QkNormCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "QK-norm (q_norm, k_norm) from qk_norm.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  // The (1 + w) form of Qwen3-Next is the glue's: it hands the kernel 1 + w, added in f32.
  ds::OpSet capabilities() const override {
    return {ds::Op::QkNorm, ds::Op::RMSNorm, ds::Op::RMSNormPlusOne};
  }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig& cfg, ds::BlockKind kind) const override {
    if ((kind != ds::BlockKind::decoder && kind != ds::BlockKind::gated_attn) || !cfg.qk_norm) return {};
    return {{"qk_norm_q", {"q"}, {"q_norm"}}, {"qk_norm_k", {"k"}, {"k_norm"}}};
  }

  // Per layer; empty for a layer without them (a Qwen3.5 hybrid's GDN layers).
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    q_w_.assign(static_cast<std::size_t>(cfg.n_layers), {});
    k_w_.assign(static_cast<std::size_t>(cfg.n_layers), {});
    for (int l = 0; l < cfg.n_layers; ++l)
      for (auto [role, w] : {std::pair{"attn_q_norm.weight", &q_w_}, std::pair{"attn_k_norm.weight", &k_w_}})
        if (const ds::Tensor* t = weights.find_layer(l, role)) {
          std::vector<float> v = to_f32(*t);
          if (cfg.norm_plus_one)
            for (float& e : v) e += 1.0f;
          (*w)[static_cast<std::size_t>(l)] = std::move(v);
        }
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const bool is_q = step.name == "qk_norm_q";
    const int heads = is_q ? cfg_.n_heads : cfg_.n_kv_heads, hd = cfg_.head_dim;
    const std::vector<float> x = to_f32(inputs.at(step.inputs[0]));
    const std::vector<float>& w = (is_q ? q_w_ : k_w_)[static_cast<std::size_t>(ctx.layer)];
    if (x.size() != static_cast<std::size_t>(ctx.n_tokens) * static_cast<std::size_t>(heads * hd) ||
        w.size() != static_cast<std::size_t>(hd))
      throw std::runtime_error(
          fmt::format("{}: input has {} values and the weight {}, expected {} x {} and {}", step.name,
                      x.size(), w.size(), ctx.n_tokens, heads * hd, hd));
    std::vector<float> y(x.size());
    @ENTRY@(y.data(), x.data(), w.data(), ctx.n_tokens, heads, hd, static_cast<float>(cfg_.norm_eps));
    ds::Tensor out(storage_dtype(), {ctx.n_tokens, heads * hd});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs[step.outputs[0]] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> q_w_, k_w_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new QkNormCandidate; }})
