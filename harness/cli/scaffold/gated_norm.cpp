// @CANDIDATE@: a Driftscope candidate whose Gated DeltaNet output norm (the gated_norm stage of a
// Qwen3.5 / Qwen3-Next linear-attention layer: an RMSNorm of each value head of the recurrence's
// output, gated by silu(z)) comes from the kernel in gated_norm.cu. Run it with `--fill reference`
// and Driftscope computes every other stage of the model, so this one kernel is judged inside a
// whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// gated_norm.cu: out[t, h, :] = o[t, h, :] / sqrt(mean(o[t, h, :]^2) + eps) * w * silu(z[t, h, :]),
// w [head_dim] shared by every head; o, z and out [tokens, heads * head_dim], host pointers.
void @ENTRY@(float* out, const float* o, const float* z, const float* w, int tokens, int heads, int head_dim,
             float eps);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class GatedNormCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "GDN gated output norm (gated_norm) from gated_norm.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {}; }  // the stage exercises no op of the catalog

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::gdn) return {};
    return {{"gated_norm", {"gdn_out", "z_gate"}, {"gated_norm"}}};
  }

  // Per layer; empty for a layer without one (the full-attention layers).
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    w_.assign(static_cast<std::size_t>(cfg.n_layers), {});
    for (int l = 0; l < cfg.n_layers; ++l)
      if (const ds::Tensor* t = weights.find_layer(l, "ssm_norm.weight"))
        w_[static_cast<std::size_t>(l)] = to_f32(*t);
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const std::vector<float> o = to_f32(inputs.at("gdn_out")), z = to_f32(inputs.at("z_gate"));
    const int heads = cfg_.gdn_v_heads, hd = cfg_.gdn_v_dim;
    const std::vector<float>& w = w_[static_cast<std::size_t>(ctx.layer)];
    const std::size_t n = static_cast<std::size_t>(ctx.n_tokens) * static_cast<std::size_t>(heads * hd);
    if (o.size() != n || z.size() != n || w.size() != static_cast<std::size_t>(hd))
      throw std::runtime_error(
          fmt::format("{}: gdn_out/z_gate/weight have {}/{}/{} values, expected {} x {} and {}", step.name,
                      o.size(), z.size(), w.size(), ctx.n_tokens, heads * hd, hd));
    std::vector<float> y(n);
    @ENTRY@(y.data(), o.data(), z.data(), w.data(), ctx.n_tokens, heads, hd,
            static_cast<float>(cfg_.norm_eps));
    ds::Tensor out(storage_dtype(), {ctx.n_tokens, heads * hd});
    for (std::size_t i = 0; i < n; ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs["gated_norm"] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> w_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0", {"@CANDIDATE@-" CANDIDATE_BACKEND,
                            []() -> ds::Candidate* { return new GatedNormCandidate; }})
