// The reference transformer (the oracle): runs a model step by step, layer by layer, and
// returns every catalog stage. It accumulates in double; with `storage` set it rounds every
// stage output (and the carried recurrent state) to that dtype, which measures the natural
// noise floor of the dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "blocks/block.h"
#include "candidate.h"
#include "model.h"
#include "numerics.h"

namespace ds::ref {

struct ReferenceOptions {
  DType storage = DType::f64;
  // Widen every weight to f64 up front, as the reference once did: the baseline the
  // stored-dtype path is proven bit-identical against (tests), at 2-4x the weights' memory.
  bool widen_all = false;
  // How the engine a noise floor models computes (numerics.h); one rounding for the oracle.
  Numerics numerics;
};

class Reference {
 public:
  // Refuses (ModelError listing every missing tensor) a model that lacks a required weight,
  // or has a weight of the wrong shape, before any compute. Keeps a copy of the model.
  explicit Reference(const Model& model, ReferenceOptions options = {});
  // Shares `model`'s tensors (the oracle, the noise floors and the candidate's load read one
  // copy of the weights): matrices and tables stay in their stored dtype and are widened a row
  // at a time as they are used; only small tensors get f64 copies of their own.
  explicit Reference(std::shared_ptr<const Model> model, ReferenceOptions options = {});

  const ModelConfig& config() const { return cfg_; }
  // Model-level stage "embed" for tokens at positions pos0...
  TensorMap embed(std::span<const std::int32_t> tokens, int pos0) const;
  // Every stage of `layer` for input x ([T, hidden], positions pos0..). Appends this step's
  // keys and values (or recurrent state) to the layer's state, so calls must come in order.
  // With `forced`, every stage it names is computed and returned as usual, but what follows it
  // in the layer (and the cache) consumes the forced value instead: a floor per kernel step.
  TensorMap layer(int layer, const Tensor& x, int pos0, const TensorMap* forced = nullptr);
  // A MoE layer's stages with expert_ids .. residual_2 recomputed for the experts `ids` [T, k]
  // instead of the router's choice, from `stages` (the layer's, as layer() returned them): the
  // oracle given a candidate's choice at a near-tie (docs/moe.md). Touches no layer state.
  TensorMap moe_given_ids(int layer, TensorMap stages, const Tensor& ids) const;
  // "final_norm" and "logits" of the last layer's output (logits from a forced final_norm).
  TensorMap head(const Tensor& x, const TensorMap* forced = nullptr) const;
  // The layer's carried recurrent state (GDN conv_state and gdn_state) replaced by the given
  // stages where they have its size: an engine recomputed from a candidate's own inputs carries the
  // candidate's state, not its own. KV caches need nothing: forced K and V are what they append.
  void adopt_state(int layer, const TensorMap& given);
  // Forgets every cache (a new sequence).
  void reset();

  // Tokens the model has consumed so far (layer 0's position).
  int positions() const;
  // Runs embed, every layer and the head for `tokens` at positions() and returns the logits
  // [T, vocab]: one prefill or decode step of the whole model.
  Tensor forward(std::span<const std::int32_t> tokens);
  // argmax of the last logits row (lowest id on ties).
  static std::int32_t greedy_next(const Tensor& logits);
  // Prefill `prompt`, then `steps` greedy decode steps; returns the generated ids.
  std::vector<std::int32_t> generate(std::span<const std::int32_t> prompt, int steps);

  // Weight by canonical name: f64 for vectors and what the f64-only ops read; matrices and
  // tables (linear's weights, embeddings) in their stored dtype.
  const Tensor& w(std::string_view name) const;
  const Tensor* w_opt(std::string_view name) const;
  // Bytes a Reference holds of its own for a weight stored as `stored` (beyond the model's
  // copy): what a run's memory estimate counts per reference.
  static std::uint64_t own_bytes(std::string_view name, const Shape& shape, DType stored);
  const LayerState& state(int layer) const { return state_.at(std::size_t(layer)); }

 private:
  Tensor stage(const Tensor& t) const;

  WeightView weights() const { return {&wide_, &model_->weights}; }

  ModelConfig cfg_;
  ReferenceOptions opt_;
  std::shared_ptr<const Model> model_;
  WeightStore wide_;  // this reference's own f64 copies
  std::vector<LayerState> state_;
};

}  // namespace ds::ref
