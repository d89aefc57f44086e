// @CANDIDATE@: a Driftscope candidate whose SwiGLU activation (ffn_act) comes from the kernel
// in swiglu.cu. Run it with `--fill reference` and Driftscope computes every other stage of
// the model, so this one kernel is judged inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// swiglu.cu: out[i] = silu(gate[i]) * up[i], host pointers.
void @ENTRY@(float* out, const float* gate, const float* up, long n);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class SwigluCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "SwiGLU (ffn_act) from swiglu.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::SwiGLU}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::decoder) return {};
    return {{"swiglu", {"gate", "up"}, {"ffn_act"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore&) override { cfg_ = cfg; }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const std::vector<float> gate = to_f32(inputs.at("gate")), up = to_f32(inputs.at("up"));
    const std::size_t n = static_cast<std::size_t>(ctx.n_tokens) * static_cast<std::size_t>(cfg_.ffn);
    if (gate.size() != n || up.size() != n)
      throw std::runtime_error(
          fmt::format("{}: gate/up have {}/{} values, expected {}", step.name, gate.size(), up.size(), n));
    std::vector<float> y(n);
    @ENTRY@(y.data(), gate.data(), up.data(), static_cast<long>(n));
    ds::Tensor out(storage_dtype(), {ctx.n_tokens, cfg_.ffn});
    for (std::size_t i = 0; i < n; ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs["ffn_act"] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new SwigluCandidate; }})
