// @CANDIDATE@: a Driftscope candidate whose Gated DeltaNet query/key l2 normalisation (the q_l2 and
// k_l2 stages of a Qwen3.5 / Qwen3-Next linear-attention layer) comes from the kernel in
// l2norm.cu. Run it with `--fill reference` and Driftscope computes every other stage of the model,
// so this one kernel is judged inside a whole model.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "plugin.h"

// l2norm.cu: per token and key head, q_out = q / sqrt(sum(q^2) + eps) * q_scale and
// k_out = k / sqrt(sum(k^2) + eps), q and k the conv output's first two key_dim channel blocks;
// conv [tokens, conv_dim], q_out and k_out [tokens, k_heads * k_dim]. Host pointers.
void @ENTRY@(float* q_out, float* k_out, const float* conv, int tokens, int k_heads, int k_dim, int conv_dim,
              float q_scale, float eps);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class L2normCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "GDN query/key l2 normalisation (q_l2, k_l2) from l2norm.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {}; }  // the stage exercises no op of the catalog

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::gdn) return {};
    return {{"l2norm", {"conv"}, {"q_l2", "k_l2"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore&) override { cfg_ = cfg; }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const int T = ctx.n_tokens, nk = cfg_.gdn_k_heads, dk = cfg_.gdn_k_dim, C = cfg_.gdn_conv_dim();
    const std::vector<float> conv = to_f32(inputs.at("conv"));
    if (conv.size() != std::size_t(T) * C)
      throw std::runtime_error(
          fmt::format("{}: conv has {} values, expected {} x {}", step.name, conv.size(), T, C));
    const std::size_t n = std::size_t(T) * nk * dk;
    std::vector<float> q(n), k(n);
    @ENTRY@(q.data(), k.data(), conv.data(), T, nk, dk, C, 1.0f / std::sqrt(float(dk)), 1e-6f);
    for (const auto& [name, v] : {std::pair{"q_l2", &q}, std::pair{"k_l2", &k}}) {
      ds::Tensor out(storage_dtype(), {T, std::int64_t(nk) * dk});
      for (std::size_t i = 0; i < n; ++i) out.set(static_cast<std::int64_t>(i), (*v)[i]);
      outputs[name] = std::move(out);
    }
  }

 private:
  ds::ModelConfig cfg_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new L2normCandidate; }})
