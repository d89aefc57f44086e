// @CANDIDATE@: a Driftscope candidate whose rotary embedding stages (q_rope, k_rope) come from
// the kernel in rope.cu. Run it with `--fill reference` and Driftscope computes every other
// stage of the model, so this one kernel is judged inside a whole model.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "plugin.h"

// rope.cu: rotates q [T, heads * head_dim] (host memory) in place.
void @ENTRY@(float* q, const float* inv_freq, int tokens, int heads, int head_dim, int rotary, int pos0,
             bool neox);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class RopeCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "RoPE (q_rope, k_rope) from rope.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  // Both pairings and partial rotation; per-pair frequency factors are applied in load().
  ds::OpSet capabilities() const override { return {ds::Op::RoPE, ds::Op::RoPENeox, ds::Op::RoPEPartial}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig& cfg, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::decoder) return {};
    const std::string q = cfg.qk_norm ? "q_norm" : "q", k = cfg.qk_norm ? "k_norm" : "k";
    return {{"rope_q", {q}, {"q_rope"}}, {"rope_k", {k}, {"k_rope"}}};
  }

  // inv_freq[i] = theta^(-2i / rotary), divided by the checkpoint's frequency factor if it has one.
  void load(const ds::ModelConfig& cfg, const ds::WeightStore&) override {
    cfg_ = cfg;
    const int rotary = cfg.rotary_dim();
    inv_freq_.resize(static_cast<std::size_t>(rotary / 2));
    for (int i = 0; i < rotary / 2; ++i) {
      double f = std::pow(cfg.rope_theta, -2.0 * i / rotary);
      if (static_cast<std::size_t>(i) < cfg.rope_freq_factors.size())
        f /= cfg.rope_freq_factors[static_cast<std::size_t>(i)];
      inv_freq_[static_cast<std::size_t>(i)] = static_cast<float>(f);
    }
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const bool is_q = step.name == "rope_q";
    const int heads = is_q ? cfg_.n_heads : cfg_.n_kv_heads;
    std::vector<float> v = to_f32(inputs.at(step.inputs[0]));
    if (v.size() != static_cast<std::size_t>(ctx.n_tokens) * static_cast<std::size_t>(heads * cfg_.head_dim))
      throw std::runtime_error(fmt::format("{}: input has {} values, expected {} x {}", step.name, v.size(),
                                           ctx.n_tokens, heads * cfg_.head_dim));
    @ENTRY@(v.data(), inv_freq_.data(), ctx.n_tokens, heads, cfg_.head_dim, cfg_.rotary_dim(), ctx.pos0,
                 cfg_.rope_mode == ds::RopeMode::neox);
    ds::Tensor out(storage_dtype(), {ctx.n_tokens, heads * cfg_.head_dim});
    for (std::size_t i = 0; i < v.size(); ++i) out.set(static_cast<std::int64_t>(i), v[i]);
    outputs[step.outputs[0]] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<float> inv_freq_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new RopeCandidate; }})
