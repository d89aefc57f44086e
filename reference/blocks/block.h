// What every block implementation gets: the layer's weights, the storage rounding, and the
// layer's persistent state (KV cache, conv and recurrent state). One file per block kind.
#pragma once

#include <string_view>
#include <vector>

#include "candidate.h"
#include "model.h"
#include "model_config.h"
#include "../ops.h"  // the reference's ops.h, not the API's of the same name
#include "numerics.h"
#include "tensor.h"
#include "weights.h"

namespace ds::ref {

// Per-layer state carried from one step to the next.
struct LayerState {
  int positions = 0;        // tokens seen so far
  Tensor k, v;              // KV cache [positions, kv_dim]; K after RoPE
  Tensor conv;              // raw pre-conv inputs [conv_state_rows, conv_dim], oldest first
  std::vector<double> ssm;  // GDN state: nv matrices S[d_k][d_v], key-major
};

// The weights a block reads: the reference's own f64 copies (norms, biases, what the f64-only
// ops read) first, then the model's tensors in their stored dtype (matrices and tables, which
// `linear` and `embed` widen a row at a time).
struct WeightView {
  const WeightStore* wide = nullptr;
  const WeightStore* stored = nullptr;

  bool has(std::string_view name) const { return wide->has(name) || stored->has(name); }
  const Tensor* find(std::string_view name) const {
    if (const Tensor* t = wide->find(name)) return t;
    return stored->find(name);
  }
  // Throws std::out_of_range naming the tensor when absent.
  const Tensor& get(std::string_view name) const {
    const Tensor* t = find(name);
    return t ? *t : stored->get(name);
  }
  // The model's quantized matrix of that name, unless this reference widened it.
  const QuantMatrix* find_quantized(std::string_view name) const {
    return wide->all().contains(name) ? nullptr : stored->find_quantized(name);
  }
  // A linear's or embedding's operand: quantized rows stay quantized.
  Matrix matrix(std::string_view name) const {
    if (const QuantMatrix* q = find_quantized(name)) return *q;
    return get(name);
  }
};

struct BlockContext {
  const ModelConfig& cfg;
  WeightView weights;
  int layer;
  DType storage;
  // One rounding for the oracle; for a noise-floor run, how the modelled engine computes.
  const Numerics& numerics;
  const Model& model;  // the weights' file types, for act-quant=ggml
  // Stages whose given values the block consumes instead of its own (an isolated-mode noise
  // floor: each kernel step computes from the same rounded inputs the candidate's step got),
  // and where the block's own values of those stages go, so they are still the ones judged.
  const TensorMap* forced = nullptr;
  TensorMap* own_values = nullptr;

  const Tensor& lw(std::string_view role) const { return weights.get(layer_weight(layer, role)); }
  const Tensor* lb(std::string_view role) const { return weights.find(layer_weight(layer, role)); }
  // Every stage output goes through here, so the precision mode covers all blocks.
  Tensor stage(const Tensor& t) const;
  // s[name] = the stage of `value`, unless `forced` holds `name`: then the forced value, and the
  // block's own goes to `own_values`.
  void put(TensorMap& s, std::string_view name, const Tensor& value) const;
  // Throws unless this step starts where the layer's state ends.
  void check_position(const LayerState& st, int pos0) const;

  // The ops whose arithmetic an engine's numerics change, routed through engine_ops.h when
  // `numerics` models one. x W^T + b for the layer's `role`.weight (and `role`.bias if present).
  Tensor linear(const Tensor& x, std::string_view role) const;
  Tensor rope(const Tensor& x, int head_dim, int pos0) const;
  Tensor attention(const Tensor& q, const LayerState& st, int head_dim, int pos0, AttnScale scale,
                   int window) const;
  Tensor gelu(const Tensor& x) const;
  // Norms with the layer's `role`.weight (and, for layernorm, `role`.bias) over rows of `width`.
  Tensor rmsnorm(const Tensor& x, std::string_view role, int width) const;
  Tensor layernorm(const Tensor& x, std::string_view role) const;
  // Appends this step's K (after RoPE) and V to the cache, in the KV cache's dtype.
  void append_kv(LayerState& st, const Tensor& k, const Tensor& v) const;
};

TensorMap decoder_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st);
TensorMap gpt2_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st);
TensorMap gdn_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st);
// The carried GDN state S from its stage tensor (either layout, cfg.gdn_state_layout): the inverse
// of what gdn_block reports as "gdn_state".
std::vector<double> gdn_state_from_stage(const ModelConfig& cfg, const Tensor& stage);
TensorMap gated_attn_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st);

// Shared pieces.
// ffn_norm .. residual_2 from s["residual_1"]: the mixture-of-experts FFN when the model has
// experts (any layer kind: Qwen3-Next's GDN and gated-attention layers too), else the dense MLP.
void ffn(const BlockContext& c, TensorMap& s);
// ffn_norm .. residual_2 from s["residual_1"] (SwiGLU, optional biases).
void swiglu_mlp(const BlockContext& c, TensorMap& s);
// ffn_norm, router_logits .. moe_out, residual_2 from s["residual_1"]: the mixture-of-experts FFN.
void moe_mlp(const BlockContext& c, TensorMap& s);
// expert_ids .. residual_2 of a MoE layer whose experts are `ids` [T, k] (the router's choice, or
// a candidate's at a near-tie, to judge what follows it), from s's ffn_norm, router_logits and
// residual_1; with a shared expert, its shexp_out, shexp_gate and the sum ffn_out too.
void moe_combine(const BlockContext& c, TensorMap& s, const Tensor& ids);

}  // namespace ds::ref
