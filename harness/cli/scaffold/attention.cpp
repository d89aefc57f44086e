// @CANDIDATE@: a Driftscope candidate whose attention core (the attn stage: scores, causal softmax
// and the weighted sum of V, for the prefill and every decode step) comes from the kernel in
// attention.cu. Run it with `--fill reference` and Driftscope computes every other stage of the
// model, so this one kernel is judged inside a whole model.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "plugin.h"

// attention.cu: out[t, h, :] = softmax_j(q[t, h, :] . k[j, g, :] * scale) v[j, g, :] over the keys
// j <= kv_len - tokens + t (causal), g = h / (n_heads / n_kv_heads), host pointers; q and out are
// [tokens, n_heads * head_dim], k and v the cache [kv_len, n_kv_heads * head_dim], this call's own
// rows last.
void @ENTRY@(float* out, const float* q, const float* k, const float* v, int tokens, int kv_len, int n_heads,
             int n_kv_heads, int head_dim, float scale);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

// Columns [from, from + n) of a row-major matrix `width` wide.
std::vector<float> columns(const std::vector<float>& m, int width, int from, int n) {
  const std::size_t rows = m.size() / static_cast<std::size_t>(width);
  std::vector<float> out(rows * static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < rows; ++r)
    for (int c = 0; c < n; ++c)
      out[r * static_cast<std::size_t>(n) + static_cast<std::size_t>(c)] =
          m[r * static_cast<std::size_t>(width) + static_cast<std::size_t>(from + c)];
  return out;
}

class AttentionCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "causal attention core (attn) from attention.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::GQA, ds::Op::MHA, ds::Op::CausalMask}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  // Decoder blocks attend with the rotated q and the KV cache; GPT-2's fused c_attn output holds
  // q, k and v side by side, split here.
  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind == ds::BlockKind::decoder || kind == ds::BlockKind::gated_attn)
      return {{"attention", {"q_rope", "cache:k_rope", "cache:v"}, {"attn"}}};
    if (kind == ds::BlockKind::gpt2) return {{"attention_qkv", {"qkv", "cache:qkv"}, {"attn"}}};
    return {};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore&) override {
    // The signature has no window: a kernel of this kind would silently attend too far back.
    if (cfg.sliding_window > 0)
      throw std::runtime_error(fmt::format(
          "a sliding window of {} positions: the attention kind computes full causal attention only",
          cfg.sliding_window));
    cfg_ = cfg;
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const int T = ctx.n_tokens, Q = cfg_.q_dim(), KV = cfg_.kv_dim();
    std::vector<float> q, k, v;
    if (step.name == "attention_qkv") {
      const int width = Q + 2 * KV;
      const std::vector<float> qkv = to_f32(inputs.at("qkv")), cache = to_f32(inputs.at("cache:qkv"));
      q = columns(qkv, width, 0, Q);
      k = columns(cache, width, Q, KV);
      v = columns(cache, width, Q + KV, KV);
    } else {
      q = to_f32(inputs.at("q_rope"));
      k = to_f32(inputs.at("cache:k_rope"));
      v = to_f32(inputs.at("cache:v"));
    }
    const int kv_len = static_cast<int>(k.size() / static_cast<std::size_t>(KV));
    if (q.size() != static_cast<std::size_t>(T) * static_cast<std::size_t>(Q) || kv_len != ctx.pos0 + T ||
        v.size() != k.size())
      throw std::runtime_error(
          fmt::format("{}: q has {} values and the cache {} rows, expected {} x {} and {}", step.name,
                      q.size(), kv_len, T, Q, ctx.pos0 + T));
    std::vector<float> y(q.size());
    @ENTRY@(y.data(), q.data(), k.data(), v.data(), T, kv_len, cfg_.n_heads, cfg_.n_kv_heads, cfg_.head_dim,
            1.0f / std::sqrt(static_cast<float>(cfg_.head_dim)));
    ds::Tensor out(storage_dtype(), {T, Q});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs["attn"] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0", {"@CANDIDATE@-" CANDIDATE_BACKEND,
                            []() -> ds::Candidate* { return new AttentionCandidate; }})
