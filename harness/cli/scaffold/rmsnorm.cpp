// @CANDIDATE@: a Driftscope candidate whose RMSNorm stages (attn_norm, ffn_norm) come from
// the kernel in rmsnorm.cu. Run it with `--fill reference` and Driftscope computes every other
// stage of the model, so this one kernel is judged inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// rmsnorm.cu: out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, host pointers.
void @ENTRY@(float* out, const float* x, const float* w, int rows, int cols, float eps);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class RmsnormCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "RMSNorm (attn_norm, ffn_norm) from rmsnorm.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  // Only what the kernel really does: plain RMSNorm (not the (1 + w) form of Qwen3-Next).
  ds::OpSet capabilities() const override { return {ds::Op::RMSNorm}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::decoder) return {};
    return {{"rmsnorm_attn", {"x"}, {"attn_norm"}}, {"rmsnorm_ffn", {"residual_1"}, {"ffn_norm"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    for (int l = 0; l < cfg.n_layers; ++l) {
      attn_w_.push_back(to_f32(weights.layer(l, "attn_norm.weight")));
      ffn_w_.push_back(to_f32(weights.layer(l, "ffn_norm.weight")));
    }
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const bool attn = step.name == "rmsnorm_attn";
    const std::vector<float> x = to_f32(inputs.at(attn ? "x" : "residual_1"));
    const int rows = ctx.n_tokens, cols = cfg_.hidden;
    if (x.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols))
      throw std::runtime_error(
          fmt::format("{}: input has {} values, expected {} x {}", step.name, x.size(), rows, cols));
    std::vector<float> y(x.size());
    const auto& w = attn ? attn_w_ : ffn_w_;
    @ENTRY@(y.data(), x.data(), w[static_cast<std::size_t>(ctx.layer)].data(), rows, cols,
                    static_cast<float>(cfg_.norm_eps));
    ds::Tensor out(storage_dtype(), {rows, cols});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs[step.outputs[0]] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> attn_w_, ffn_w_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new RmsnormCandidate; }})
