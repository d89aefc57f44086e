// @CANDIDATE@: a Driftscope candidate whose LayerNorm stages (GPT-2's ln_1, ln_2 and ln_f, the
// stages ln_1, ln_2 and final_norm) come from the kernel in layernorm.cu. Run it with `--fill
// reference` and Driftscope computes every other stage of the model, so this one kernel is judged
// inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"
@ELEM_HEADER@

// The element type of the kernel's activations and weights: float, or __half where a stage map
// asks for the f16 variant (`dtype: f16`).
using Elem = @ELEM@;

// layernorm.cu: out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * w + b, var the biased variance,
// host pointers. mean and rstd ([rows] each, as llm.c's layernorm_forward writes them for its
// backward pass) may be filled or left alone: nothing reads them.
void @ENTRY@(Elem* out, float* mean, float* rstd, const Elem* x, const Elem* w, const Elem* b, int rows,
             int cols, float eps);

std::string @UNAVAILABLE@();

namespace {

std::vector<Elem> to_elem(const ds::Tensor& t) {
  std::vector<Elem> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    v[static_cast<std::size_t>(i)] = Elem(static_cast<float>(t.at(i)));
  return v;
}

struct Norm {
  std::vector<Elem> w, b;
};

class LayernormCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "LayerNorm (ln_1, ln_2, final_norm) from layernorm.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::LayerNorm}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  // GPT-2's blocks and its head are the ones whose norms are LayerNorms; for any other family
  // the plan is empty and the coverage gate says which stages are left.
  std::vector<ds::KernelStep> plan(const ds::ModelConfig& cfg, ds::BlockKind kind) const override {
    if (kind == ds::BlockKind::gpt2)
      return {{"layernorm_attn", {"x"}, {"ln_1"}}, {"layernorm_mlp", {"residual_1"}, {"ln_2"}}};
    if (kind == ds::BlockKind::head && cfg.family == ds::Family::gpt2)
      return {{"layernorm_final", {"x"}, {"final_norm"}}};
    return {};
  }

  // GGUF names: ln_1 is attn_norm, ln_2 ffn_norm, ln_f output_norm.
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    attn_.clear();
    ffn_.clear();
    if (cfg.family != ds::Family::gpt2) return;
    const auto norm = [&](const std::string& role) {
      return Norm{to_elem(weights.get(role + ".weight")), to_elem(weights.get(role + ".bias"))};
    };
    for (int l = 0; l < cfg.n_layers; ++l) {
      attn_.push_back(norm(ds::layer_weight(l, "attn_norm")));
      ffn_.push_back(norm(ds::layer_weight(l, "ffn_norm")));
    }
    final_ = norm("output_norm");
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const std::vector<Elem> x = to_elem(inputs.at(step.inputs[0]));
    const int rows = ctx.n_tokens, cols = cfg_.hidden;
    if (x.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols))
      throw std::runtime_error(
          fmt::format("{}: input has {} values, expected {} x {}", step.name, x.size(), rows, cols));
    const auto l = static_cast<std::size_t>(ctx.layer);
    const Norm& n = step.name == "layernorm_final"  ? final_
                    : step.name == "layernorm_attn" ? attn_[l]
                                                    : ffn_[l];
    std::vector<Elem> y(x.size());
    std::vector<float> mean(static_cast<std::size_t>(rows)), rstd(mean.size());
    @ENTRY@(y.data(), mean.data(), rstd.data(), x.data(), n.w.data(), n.b.data(), rows, cols,
            static_cast<float>(cfg_.norm_eps));
    ds::Tensor out(storage_dtype(), {rows, cols});
    for (std::size_t i = 0; i < y.size(); ++i)
      out.set(static_cast<std::int64_t>(i), static_cast<float>(y[i]));
    outputs[step.outputs[0]] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<Norm> attn_, ffn_;  // per layer
  Norm final_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0", {"@CANDIDATE@-" CANDIDATE_BACKEND,
                            []() -> ds::Candidate* { return new LayernormCandidate; }})
