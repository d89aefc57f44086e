// A GPT-2 LayerNorm candidate (ln_1, ln_2) around layernorm.cu; --fill reference computes the rest.
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin.h"

void layernorm_forward(float* out, const float* x, const float* w, const float* b, int rows, int cols,
                       float eps);
std::string layernorm_unavailable();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class LayernormCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "std-layernorm-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "GPT-2 LayerNorm from layernorm.cu, on " CANDIDATE_BACKEND;
  }
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::LayerNorm}; }
  std::string unavailable() const override { return layernorm_unavailable(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::gpt2) return {};
    return {{"layernorm_attn", {"x"}, {"ln_1"}}, {"layernorm_mlp", {"residual_1"}, {"ln_2"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    for (int l = 0; l < cfg.n_layers; ++l) {
      for (const char* norm : {"attn_norm", "ffn_norm"}) {
        weights_.push_back(to_f32(weights.layer(l, std::string(norm) + ".weight")));
        weights_.push_back(to_f32(weights.layer(l, std::string(norm) + ".bias")));
      }
    }
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const bool attn = step.name == "layernorm_attn";
    const std::vector<float> x = to_f32(inputs.at(attn ? "x" : "residual_1"));
    const int rows = ctx.n_tokens, cols = cfg_.hidden;
    if (x.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols))
      throw std::runtime_error(step.name + ": input size differs from tokens x hidden");
    const std::size_t at = static_cast<std::size_t>(ctx.layer) * 4 + (attn ? 0 : 2);
    std::vector<float> y(x.size());
    layernorm_forward(y.data(), x.data(), weights_[at].data(), weights_[at + 1].data(), rows, cols,
                      static_cast<float>(cfg_.norm_eps));
    ds::Tensor out(storage_dtype(), {rows, cols});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs[step.outputs[0]] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> weights_;  // per layer: attn w, attn b, ffn w, ffn b
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0", {"std-layernorm-" CANDIDATE_BACKEND,
                            []() -> ds::Candidate* { return new LayernormCandidate; }})
