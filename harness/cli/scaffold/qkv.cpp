// @CANDIDATE@: a Driftscope candidate whose fused QKV projection (q, k and v of a decoder block in
// one launch, or GPT-2's c_attn, the qkv stage) comes from the kernel in qkv.cu. Run it with
// `--fill reference` and Driftscope computes every other stage of the model, so this one kernel is
// judged inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// qkv.cu: qkv[t, r] = sum_c W[r, c] * x[t, c] + bias[r], W [q_dim + 2 kv_dim, hidden] (the q rows,
// then k's, then v's), bias null or [q_dim + 2 kv_dim]; each row of qkv is q | k | v. Host pointers.
void @ENTRY@(float* qkv, const float* x, const float* W, const float* bias, int tokens, int hidden, int q_dim,
             int kv_dim);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class QkvCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "fused QKV projection (q, k, v or qkv) from qkv.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::BiasAdd}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind == ds::BlockKind::decoder) return {{"fused_qkv", {"attn_norm"}, {"q", "k", "v"}}};
    if (kind == ds::BlockKind::gpt2) return {{"c_attn", {"ln_1"}, {"qkv"}}};
    return {};
  }

  // A decoder's three projections stacked into one [q_dim + 2 kv_dim, hidden] matrix (and their
  // biases, where the family has them), as a fused kernel keeps them; GPT-2's c_attn already is.
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    w_.assign(static_cast<std::size_t>(cfg.n_layers), {});
    b_.assign(static_cast<std::size_t>(cfg.n_layers), {});
    for (int l = 0; l < cfg.n_layers; ++l) {
      const auto at = static_cast<std::size_t>(l);
      const auto block = cfg.block_kind(l);
      const std::vector<std::string> parts =
          block == ds::BlockKind::gpt2      ? std::vector<std::string>{"attn_qkv"}
          : block == ds::BlockKind::decoder ? std::vector<std::string>{"attn_q", "attn_k", "attn_v"}
                                            : std::vector<std::string>{};
      for (const std::string& p : parts) {
        const std::vector<float> w = to_f32(weights.layer(l, p + ".weight"));
        w_[at].insert(w_[at].end(), w.begin(), w.end());
        if (const ds::Tensor* b = weights.find_layer(l, p + ".bias")) {
          const std::vector<float> bv = to_f32(*b);
          b_[at].insert(b_[at].end(), bv.begin(), bv.end());
        }
      }
      const std::size_t rows = static_cast<std::size_t>(cfg.q_dim() + 2 * cfg.kv_dim());
      if (!parts.empty() && (w_[at].size() != rows * static_cast<std::size_t>(cfg.hidden) ||
                             (!b_[at].empty() && b_[at].size() != rows)))
        throw std::runtime_error(
            fmt::format("layer {}: the q, k and v weights have {} values and their biases {}, "
                        "expected {} x {} and none or {}",
                        l, w_[at].size(), b_[at].size(), rows, cfg.hidden, rows));
    }
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const std::vector<float> x = to_f32(inputs.at(step.inputs[0]));
    const int T = ctx.n_tokens, Q = cfg_.q_dim(), KV = cfg_.kv_dim(), width = Q + 2 * KV;
    if (x.size() != static_cast<std::size_t>(T) * static_cast<std::size_t>(cfg_.hidden))
      throw std::runtime_error(
          fmt::format("{}: input has {} values, expected {} x {}", step.name, x.size(), T, cfg_.hidden));
    const auto l = static_cast<std::size_t>(ctx.layer);
    std::vector<float> y(static_cast<std::size_t>(T) * static_cast<std::size_t>(width));
    @ENTRY@(y.data(), x.data(), w_[l].data(), b_[l].empty() ? nullptr : b_[l].data(), T, cfg_.hidden, Q, KV);
    // Columns [from, from + n) of each row as one stage.
    const auto stage = [&](const std::string& name, int from, int n) {
      ds::Tensor out(storage_dtype(), {T, n});
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < n; ++c)
          out.set(static_cast<std::int64_t>(t) * n + c, y[static_cast<std::size_t>(t) * width + from + c]);
      outputs[name] = std::move(out);
    };
    if (step.name == "c_attn") {
      stage("qkv", 0, width);
    } else {
      stage("q", 0, Q);
      stage("k", Q, KV);
      stage("v", Q + KV, KV);
    }
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> w_, b_;  // per layer
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0",
                  {"@CANDIDATE@-" CANDIDATE_BACKEND, []() -> ds::Candidate* { return new QkvCandidate; }})
