// @CANDIDATE@: a Driftscope candidate whose residual adds (residual_1, residual_2, in every block
// kind that has them) come from the kernel in residual.cu. Run it with `--fill reference` and
// Driftscope computes every other stage of the model, so this one kernel is judged inside a whole
// model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"
@ELEM_HEADER@

// The element type of the kernel's activations and weights: float, or __half where a stage map
// asks for the f16 variant (`dtype: f16`).
using Elem = @ELEM@;

// residual.cu: out[i] = a[i] + b[i], host pointers.
void @ENTRY@(Elem* out, const Elem* a, const Elem* b, long n);

std::string @UNAVAILABLE@();

namespace {

std::vector<Elem> to_elem(const ds::Tensor& t) {
  std::vector<Elem> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    v[static_cast<std::size_t>(i)] = Elem(static_cast<float>(t.at(i)));
  return v;
}

class ResidualCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "residual adds (residual_1, residual_2) from residual.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {}; }  // an add exercises no op of the catalog

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  // The layer input plus the mixer's output, then that plus the MLP's: which stage is the mixer's
  // and the MLP's output depends on the block (the stage catalog's order).
  std::vector<ds::KernelStep> plan(const ds::ModelConfig& cfg, ds::BlockKind kind) const override {
    if (kind == ds::BlockKind::embed || kind == ds::BlockKind::head) return {};
    const std::string mixer = kind == ds::BlockKind::gdn ? "out_proj" : "attn_out";
    const std::string mlp = kind == ds::BlockKind::gpt2 ? "proj"
                            : cfg.shared_expert()       ? "ffn_out"
                            : cfg.moe()                 ? "moe_out"
                                                        : "down";
    return {{"residual_attn", {"x", mixer}, {"residual_1"}},
            {"residual_mlp", {"residual_1", mlp}, {"residual_2"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore&) override { cfg_ = cfg; }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const std::vector<Elem> a = to_elem(inputs.at(step.inputs[0])), b = to_elem(inputs.at(step.inputs[1]));
    const std::size_t n = static_cast<std::size_t>(ctx.n_tokens) * static_cast<std::size_t>(cfg_.hidden);
    if (a.size() != n || b.size() != n)
      throw std::runtime_error(fmt::format("{}: {}/{} have {}/{} values, expected {}", step.name,
                                           step.inputs[0], step.inputs[1], a.size(), b.size(), n));
    std::vector<Elem> y(n);
    @ENTRY@(y.data(), a.data(), b.data(), static_cast<long>(n));
    ds::Tensor out(storage_dtype(), {ctx.n_tokens, cfg_.hidden});
    for (std::size_t i = 0; i < n; ++i) out.set(static_cast<std::int64_t>(i), static_cast<float>(y[i]));
    outputs[step.outputs[0]] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0", {"@CANDIDATE@-" CANDIDATE_BACKEND,
                            []() -> ds::Candidate* { return new ResidualCandidate; }})
