// A plugin candidate for `run --simt-memcheck`'s CLI test (tests/cli/test_memcheck.py): the RMSNorm
// stages of a decoder by flat_rmsnorm.cu's kernel, which stores past its output at a one-token
// step; the other stages filled by the reference. Linked against the kernel's CHECKED flavour.
#include <string>
#include <vector>

#include "flat_rmsnorm.h"
#include "plugin.h"

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class FlatRmsnorm final : public ds::Candidate {
 public:
  enum class Kind { flat, leaky, row, vec4 };
  // flat: the unguarded store; leaky: the store guarded, and the device copy of the weight never
  // freed (a leak per call); row: a block per row sharing 1/rms through one shared float; vec4: a
  // thread per row reading it as float4 (past the row at odd widths).
  explicit FlatRmsnorm(Kind kind) : kind_(kind) {}
  std::string name() const override {
    return kind_ == Kind::leaky  ? "leaky-rmsnorm"
           : kind_ == Kind::row  ? "row-rmsnorm"
           : kind_ == Kind::vec4 ? "vec4-rmsnorm"
                                 : "flat-rmsnorm";
  }
  std::string description() const override {
    return kind_ == Kind::leaky  ? "RMSNorm whose host code never frees the device copy of its weight"
           : kind_ == Kind::row  ? "RMSNorm whose threads all store the same 1/rms to one shared float"
           : kind_ == Kind::vec4 ? "RMSNorm reading each row as float4, whatever its width"
                                 : "RMSNorm over a flat grid with no guard on its store";
  }
  ds::DType storage_dtype() const override { return ds::DType::f32; }
  ds::OpSet capabilities() const override { return {ds::Op::RMSNorm}; }

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
    const auto& w = (attn ? attn_w_ : ffn_w_)[static_cast<std::size_t>(ctx.layer)];
    std::vector<float> y(x.size());
    const float eps = static_cast<float>(cfg_.norm_eps);
    if (kind_ == Kind::row)
      row_rmsnorm(y.data(), x.data(), w.data(), ctx.n_tokens, cfg_.hidden, eps);
    else if (kind_ == Kind::vec4)
      vec4_rmsnorm(y.data(), x.data(), w.data(), ctx.n_tokens, cfg_.hidden, eps);
    else
      flat_rmsnorm(y.data(), x.data(), w.data(), ctx.n_tokens, cfg_.hidden, eps, kind_ == Kind::leaky,
                   kind_ != Kind::leaky);
    ds::Tensor out(storage_dtype(), {ctx.n_tokens, cfg_.hidden});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs[step.outputs[0]] = std::move(out);
  }

 private:
  Kind kind_;
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> attn_w_, ffn_w_;
};

}  // namespace

DRIFTSCOPE_PLUGIN(
    "1.0.0", {"flat-rmsnorm", []() -> ds::Candidate* { return new FlatRmsnorm(FlatRmsnorm::Kind::flat); }},
    {"leaky-rmsnorm", []() -> ds::Candidate* { return new FlatRmsnorm(FlatRmsnorm::Kind::leaky); }},
    {"row-rmsnorm", []() -> ds::Candidate* { return new FlatRmsnorm(FlatRmsnorm::Kind::row); }},
    {"vec4-rmsnorm", []() -> ds::Candidate* { return new FlatRmsnorm(FlatRmsnorm::Kind::vec4); }})
