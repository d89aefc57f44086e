// @CANDIDATE@: a Driftscope candidate whose GELU activation (GPT-2's gelu stage) comes from the
// kernel in gelu.cu. Run it with `--fill reference` and Driftscope computes every other stage of
// the model, so this one kernel is judged inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"
@ELEM_HEADER@

// The element type of the kernel's activations and weights: float, or __half where a stage map
// asks for the f16 variant (`dtype: f16`).
using Elem = @ELEM@;

// gelu.cu: out[i] = gelu_new(x[i]), the tanh approximation, host pointers.
void @ENTRY@(Elem* out, const Elem* x, long n);

std::string @UNAVAILABLE@();

namespace {

std::vector<Elem> to_elem(const ds::Tensor& t) {
  std::vector<Elem> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    v[static_cast<std::size_t>(i)] = Elem(static_cast<float>(t.at(i)));
  return v;
}

class GeluCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override { return "GELU (gelu) from gelu.cu, on " CANDIDATE_BACKEND; }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::GeluMlp}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::gpt2) return {};
    return {{"gelu", {"fc"}, {"gelu"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore&) override { cfg_ = cfg; }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const std::vector<Elem> x = to_elem(inputs.at("fc"));
    const std::size_t n = static_cast<std::size_t>(ctx.n_tokens) * static_cast<std::size_t>(cfg_.ffn);
    if (x.size() != n)
      throw std::runtime_error(fmt::format("{}: fc has {} values, expected {}", step.name, x.size(), n));
    std::vector<Elem> y(n);
    @ENTRY@(y.data(), x.data(), static_cast<long>(n));
    ds::Tensor out(storage_dtype(), {ctx.n_tokens, cfg_.ffn});
    for (std::size_t i = 0; i < n; ++i) out.set(static_cast<std::int64_t>(i), static_cast<float>(y[i]));
    outputs["gelu"] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new GeluCandidate; }})
