// @CANDIDATE@: a Driftscope candidate whose token embedding (the embed stage: the token's row of
// the embedding table, plus its position's row where the model learns positions, as GPT-2 does)
// comes from the kernel in embedding.cu. Run it with `--fill reference` and Driftscope computes
// every other stage of the model, so this one kernel is judged inside a whole model.
#include <fmt/format.h>

#include <vector>

#include "plugin.h"

// embedding.cu: out[t, :] = wte[ids[t], :] + wpe[pos0 + t, :], host pointers; wte is [vocab, cols],
// wpe [positions, cols], or null (and positions 0) for a model without learned positions.
void @ENTRY@(float* out, const int* ids, const float* wte, const float* wpe, int tokens, int vocab,
             int positions, int cols, int pos0);

std::string @UNAVAILABLE@();

namespace {

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class EmbeddingCandidate final : public ds::Candidate {
 public:
  std::string name() const override { return "@CANDIDATE@-" CANDIDATE_BACKEND; }
  std::string description() const override {
    return "token embedding (embed) from embedding.cu, on " CANDIDATE_BACKEND;
  }
  // Stages are handed over in f16, as a fused f16 kernel stores them: the noise floor Driftscope
  // judges by is f16's, and f32 math inside the kernel sits well below it.
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::AbsolutePos}; }

  // The gate answers UNAVAILABLE with this (the CUDA build on a machine without a GPU).
  std::string unavailable() const override { return @UNAVAILABLE@(); }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::embed) return {};
    return {{"embedding", {"tokens"}, {"embed"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    wte_ = to_f32(weights.get("token_embd.weight"));
    const ds::Tensor* wpe = weights.find("position_embd.weight");
    wpe_ = wpe ? to_f32(*wpe) : std::vector<float>{};
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const ds::Tensor& tokens = inputs.at("tokens");
    if (tokens.numel() != ctx.n_tokens)
      throw std::runtime_error(
          fmt::format("{}: {} token ids, expected {}", step.name, tokens.numel(), ctx.n_tokens));
    std::vector<int> ids(static_cast<std::size_t>(ctx.n_tokens));
    for (std::size_t t = 0; t < ids.size(); ++t)
      ids[t] = static_cast<int>(tokens.at(static_cast<std::int64_t>(t)));
    const int cols = cfg_.hidden;
    const int vocab = static_cast<int>(wte_.size() / static_cast<std::size_t>(cols));
    const int positions = static_cast<int>(wpe_.size() / static_cast<std::size_t>(cols));
    // The kernel reads what it is given: a token or position outside the tables is the model's
    // error, said here rather than read past a table.
    for (int id : ids)
      if (id < 0 || id >= vocab)
        throw std::runtime_error(
            fmt::format("{}: token id {} outside the vocabulary of {}", step.name, id, vocab));
    if (!wpe_.empty() && ctx.pos0 + ctx.n_tokens > positions)
      throw std::runtime_error(fmt::format("{}: position {} beyond the {} learned positions", step.name,
                                           ctx.pos0 + ctx.n_tokens - 1, positions));
    std::vector<float> y(static_cast<std::size_t>(ctx.n_tokens) * static_cast<std::size_t>(cols));
    @ENTRY@(y.data(), ids.data(), wte_.data(), wpe_.empty() ? nullptr : wpe_.data(), ctx.n_tokens, vocab,
            positions, cols, ctx.pos0);
    ds::Tensor out(storage_dtype(), {ctx.n_tokens, cols});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    outputs["embed"] = std::move(out);
  }

 private:
  ds::ModelConfig cfg_;
  std::vector<float> wte_, wpe_;
};

}  // namespace

DRIFTSCOPE_PLUGIN("0.1.0", {"@CANDIDATE@-" CANDIDATE_BACKEND,
                            []() -> ds::Candidate* { return new EmbeddingCandidate; }})
