// What every block implementation gets: the layer's weights, the storage rounding, and the
// layer's persistent state (KV cache, conv and recurrent state). One file per block kind.
#pragma once

#include <string_view>
#include <vector>

#include "candidate.h"
#include "model_config.h"
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

struct BlockContext {
  const ModelConfig& cfg;
  const WeightStore& weights;  // f64 (large tables may be f32)
  int layer;
  DType storage;

  const Tensor& lw(std::string_view role) const { return weights.layer(layer, role); }
  const Tensor* lb(std::string_view role) const { return weights.find_layer(layer, role); }
  // Every stage output goes through here, so the precision mode covers all blocks.
  Tensor stage(const Tensor& t) const;
  // Throws unless this step starts where the layer's state ends.
  void check_position(const LayerState& st, int pos0) const;
};

TensorMap decoder_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st);
TensorMap gpt2_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st);
TensorMap gdn_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st);
TensorMap gated_attn_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st);

// Shared pieces.
// ffn_norm .. residual_2 from s["residual_1"] (SwiGLU, optional biases).
void swiglu_mlp(const BlockContext& c, TensorMap& s);
// Appends this step's K (after RoPE) and V to the cache.
void append_kv(LayerState& st, const Tensor& k, const Tensor& v);

}  // namespace ds::ref
