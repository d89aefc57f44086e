// @CANDIDATE@: a Driftscope candidate whose MLP down projection (down) comes from the GEMV
// kernel in gemv.cu. Run it with `--fill reference` and Driftscope computes every other stage
// of the model, so this one kernel is judged inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// gemv.cu: y[t, r] = sum_c W[r, c] * x[t, c] + b[r], host pointers; bias may be null.
void @ENTRY@(float* y, const float* W, const float* x, const float* bias, int tokens, int rows,
             int cols);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class GemvCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "MLP down projection (down) from gemv.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::BiasAdd}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::decoder) return {};
    return {{"down_proj", {"ffn_act"}, {"down"}}};
  }

  // Weights are [out, in] = [hidden, ffn], in whatever dtype the checkpoint stores them.
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    for (int l = 0; l < cfg.n_layers; ++l) {
      const ds::Tensor& w = weights.layer(l, "ffn_down.weight");
      if (w.numel() != static_cast<std::int64_t>(cfg.hidden) * cfg.ffn)
        throw std::runtime_error(fmt::format("layer {}: ffn_down.weight has {} values, expected {} x {}", l,
                                             w.numel(), cfg.hidden, cfg.ffn));
      w_.push_back(to_f32(w));
      const ds::Tensor* b = weights.find_layer(l, "ffn_down.bias");
      b_.push_back(b ? to_f32(*b) : std::vector<float>{});
    }
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const std::vector<float> x = to_f32(inputs.at("ffn_act"));
    const int T = ctx.n_tokens, rows = cfg_.hidden, cols = cfg_.ffn;
    if (x.size() != static_cast<std::size_t>(T) * static_cast<std::size_t>(cols))
      throw std::runtime_error(
          fmt::format("{}: input has {} values, expected {} x {}", step.name, x.size(), T, cols));
    const auto l = static_cast<std::size_t>(ctx.layer);
    std::vector<float> y(static_cast<std::size_t>(T) * static_cast<std::size_t>(rows));
    @ENTRY@(y.data(), w_[l].data(), x.data(), b_[l].empty() ? nullptr : b_[l].data(), T, rows, cols);
    ds::Tensor out(storage_dtype(), {T, rows});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs["down"] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> w_, b_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new GemvCandidate; }})
