// @CANDIDATE@: a Driftscope candidate whose Gated DeltaNet causal conv + SiLU (the conv and
// conv_state stages of a Qwen3.5 / Qwen3-Next linear-attention layer) comes from the kernel in
// conv.cu. Run it with `--fill reference` and Driftscope computes every other stage of the model,
// so this one kernel is judged inside a whole model, decode steps included: each step hands it the
// raw inputs its previous step kept (the prev:conv_state input), as a serving engine's cache does.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// conv.cu: out[t, c] = silu(sum_i w[c, i] * window[S + t - (K - 1) + i, c]) over the window
// [state | x]; x and out [tokens, channels], w [channels, taps], state [state_rows, channels] in
// (the sequence's last raw inputs, oldest first; zeros at its start) and out (the window's last
// state_rows rows). Host pointers.
void @ENTRY@(float* out, float* state, const float* x, const float* w, int tokens, int channels, int taps,
              int state_rows);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class ConvCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "GDN causal conv + SiLU (conv, conv_state) from conv.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  // The plain conv over a window it is handed; not the fused update ops that keep the state in a
  // cache of slots (SsmConvUpdate, SsmConvUpdateIds).
  ds::OpSet capabilities() const override { return {ds::Op::SsmConv}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::gdn) return {};
    return {{"conv", {"qkv_mixed", "prev:conv_state"}, {"conv", "conv_state"}}};
  }

  // Per layer; empty for a layer without one (the full-attention layers).
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    w_.assign(static_cast<std::size_t>(cfg.n_layers), {});
    for (int l = 0; l < cfg.n_layers; ++l)
      if (const ds::Tensor* t = weights.find_layer(l, "ssm_conv1d.weight"))
        w_[static_cast<std::size_t>(l)] = to_f32(*t);
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const int T = ctx.n_tokens, C = cfg_.gdn_conv_dim(), K = cfg_.conv_kernel, S = cfg_.conv_state_rows();
    const std::vector<float> x = to_f32(inputs.at("qkv_mixed"));
    const std::vector<float>& w = w_[static_cast<std::size_t>(ctx.layer)];
    if (x.size() != std::size_t(T) * C || w.size() != std::size_t(C) * K)
      throw std::runtime_error(
          fmt::format("{}: qkv_mixed/ssm_conv1d.weight have {}/{} values, expected {} x {} and {} x {}",
                      step.name, x.size(), w.size(), T, C, C, K));
    std::vector<float> state(std::size_t(S) * C, 0.0f);
    const ds::Tensor& prev = inputs.at("prev:conv_state");
    if (!prev.empty()) {
      if (prev.numel() != static_cast<std::int64_t>(state.size()))
        throw std::runtime_error(fmt::format("{}: prev:conv_state has {} values, expected {} x {}", step.name,
                                             prev.numel(), S, C));
      state = to_f32(prev);
    }
    std::vector<float> y(x.size());
    @ENTRY@(y.data(), state.data(), x.data(), w.data(), T, C, K, S);
    ds::Tensor out(storage_dtype(), {T, C});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    ds::Tensor st(storage_dtype(), {S, C});
    for (std::size_t i = 0; i < state.size(); ++i) st.set(static_cast<std::int64_t>(i), state[i]);
    outputs["conv"] = std::move(out);
    outputs["conv_state"] = std::move(st);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> w_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new ConvCandidate; }})
