// @CANDIDATE@: a Driftscope candidate whose Gated DeltaNet recurrence (the gdn_out and gdn_state
// stages of a Qwen3.5 / Qwen3-Next linear-attention layer) comes from the kernel in gdn.cu. Run it
// with `--fill reference` and Driftscope computes every other stage of the model, so this one
// kernel is judged inside a whole model, decode steps included: each step hands it the state its
// previous step left (the prev:gdn_state input), as a serving engine's cache does.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// gdn.cu: the delta rule over the call's tokens. q, k [tokens, k_heads * k_dim] (q l2-normalised and
// scaled, k l2-normalised), v [tokens, v_heads * v_dim], g and beta [tokens, v_heads]; state
// [v_heads, k_dim, v_dim] in (the sequence's state, zeros at its start) and out (after the call);
// out [tokens, v_heads * v_dim]; `tiled`: value head h reads key head h % k_heads, else
// h / (v_heads / k_heads). Host pointers.
void @ENTRY@(float* out, float* state, const float* q, const float* k, const float* v, const float* g,
              const float* beta, int tokens, int k_heads, int v_heads, int k_dim, int v_dim, bool tiled);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class GdnCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "GDN delta-rule recurrence (gdn_out, gdn_state) from gdn.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  // The plain recurrence with its state handed back; not the fused ops that keep the state in a
  // cache of slots (GdnInplace, GdnInplaceIds), which the GDN state-slots part of `check` needs.
  // Either head order: the kernel is told which (`tiled`).
  ds::OpSet capabilities() const override { return {ds::Op::GatedDeltaNet, ds::Op::GdnTiledHeads}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::gdn) return {};
    return {{"gdn", {"q_l2", "k_l2", "conv", "g", "beta", "prev:gdn_state"}, {"gdn_out", "gdn_state"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore&) override { cfg_ = cfg; }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const int T = ctx.n_tokens, nk = cfg_.gdn_k_heads, nv = cfg_.gdn_v_heads, dk = cfg_.gdn_k_dim,
              dv = cfg_.gdn_v_dim;
    const std::vector<float> q = to_f32(inputs.at("q_l2")), k = to_f32(inputs.at("k_l2")),
                             conv = to_f32(inputs.at("conv")), g = to_f32(inputs.at("g")),
                             beta = to_f32(inputs.at("beta"));
    const std::size_t key = std::size_t(nk) * dk, value = std::size_t(nv) * dv, conv_dim = 2 * key + value;
    if (q.size() != T * key || k.size() != T * key || conv.size() != T * conv_dim ||
        g.size() != std::size_t(T) * nv || beta.size() != std::size_t(T) * nv)
      throw std::runtime_error(
          fmt::format("{}: q_l2/k_l2/conv/g/beta have {}/{}/{}/{}/{} values for {} tokens", step.name,
                      q.size(), k.size(), conv.size(), g.size(), beta.size(), T));
    // v is the conv output's last value_dim channels ([q | k | v]).
    std::vector<float> v(T * value);
    for (int t = 0; t < T; ++t)
      for (std::size_t c = 0; c < value; ++c) v[t * value + c] = conv[t * conv_dim + 2 * key + c];
    // The state stage's layout is the model's ([v_heads * k_dim, v_dim] key-major, or value-major);
    // the kernel's is [v_heads, k_dim, v_dim].
    const bool key_major = cfg_.gdn_state_layout == ds::GdnStateLayout::key_major;
    const auto at = [&](int h, int i, int j) {
      return static_cast<std::int64_t>(key_major ? (std::int64_t(h) * dk + i) * dv + j
                                                 : (std::int64_t(h) * dv + j) * dk + i);
    };
    std::vector<float> state(std::size_t(nv) * dk * dv, 0.0f);
    const ds::Tensor& prev = inputs.at("prev:gdn_state");
    if (!prev.empty()) {
      if (prev.numel() != static_cast<std::int64_t>(state.size()))
        throw std::runtime_error(fmt::format("{}: prev:gdn_state has {} values, expected {}", step.name,
                                             prev.numel(), state.size()));
      for (int h = 0; h < nv; ++h)
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j)
            state[(std::size_t(h) * dk + i) * dv + j] = static_cast<float>(prev.at(at(h, i, j)));
    }
    std::vector<float> y(T * value);
    @ENTRY@(y.data(), state.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), T, nk, nv, dk, dv,
             cfg_.gdn_head_map == ds::GdnHeadMap::tiled);
    ds::Tensor out(storage_dtype(), {T, static_cast<std::int64_t>(value)});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    ds::Tensor st(storage_dtype(),
                  {key_major ? std::int64_t(nv) * dk : std::int64_t(nv) * dv, key_major ? dv : dk});
    for (int h = 0; h < nv; ++h)
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) st.set(at(h, i, j), state[(std::size_t(h) * dk + i) * dv + j]);
    outputs["gdn_out"] = std::move(out);
    outputs["gdn_state"] = std::move(st);
  }

 private:
  ds::ModelConfig cfg_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new GdnCandidate; }})
