// The reference transformer (the oracle): runs a model step by step, layer by layer, and
// returns every catalog stage. It accumulates in double; with `storage` set it rounds every
// stage output to that dtype, which measures the natural noise floor of the dtype.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "candidate.h"
#include "model.h"

namespace ds::ref {

struct ReferenceOptions {
  DType storage = DType::f64;
};

class Reference {
 public:
  explicit Reference(const Model& model, ReferenceOptions options = {});

  const ModelConfig& config() const { return cfg_; }
  // Model-level stage "embed" for tokens at positions pos0...
  TensorMap embed(std::span<const std::int32_t> tokens, int pos0) const;
  // Every stage of `layer` for input x ([T, hidden], positions pos0..). Appends this step's
  // keys and values (or recurrent state) to the layer's cache, so calls must come in order.
  TensorMap layer(int layer, const Tensor& x, int pos0);
  // "final_norm" and "logits" of the last layer's output.
  TensorMap head(const Tensor& x) const;
  // Forgets every cache (a new sequence).
  void reset();

  // Weight by canonical name, as f64.
  const Tensor& w(std::string_view name) const;
  const Tensor* w_opt(std::string_view name) const;

 private:
  TensorMap decoder_layer(int layer, const Tensor& x, int pos0);
  Tensor stage(Tensor t) const { return round_stage_(t); }
  Tensor round_stage_(const Tensor& t) const;

  ModelConfig cfg_;
  ReferenceOptions opt_;
  WeightStore w64_;
  struct LayerCache {
    Tensor k, v;  // [positions, kv_dim], K after RoPE
  };
  std::vector<LayerCache> cache_;
};

}  // namespace ds::ref
