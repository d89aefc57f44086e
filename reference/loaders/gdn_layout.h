// How checkpoints lay out a Gated DeltaNet layer's value heads and projections, and the moves
// between those layouts (reference-math.md §3.1, docs/synthetic-models.md).
//
// Value-head order: HF checkpoints (and the reference's canonical weights) group the value
// heads by the key head they read, [k0v0, k0v1, .., k1v0, ..]; llama.cpp's qwen35 converter
// writes them tiled, [k0v0, k1v0, .., k0v1, ..], so that ggml's broadcast pairs value head j
// with key head j mod n_k (GdnHeadMap::tiled). The same weights in the other order, with the
// other head map, compute the same model: every per-value-head stage comes out in that order.
//
// Fused projections: Qwen3-Next checkpoints (HF in_proj_qkvz / in_proj_ba, llama.cpp's legacy
// ssm_in / ssm_beta_alpha) hold, per key head g, [q_g | k_g | v_g | z_g] and [b_g | a_g], with
// the value heads of group g in grouped order.
#pragma once

#include <string>

#include "model.h"

namespace ds::ref {

// Rewrites every value-head-indexed tensor of the GDN layers of `w` (attn_qkv's value rows,
// attn_gate, ssm_beta, ssm_alpha, ssm_dt.bias, ssm_a, ssm_conv1d's value channels, ssm_out's
// columns) from order `from` to order `to`; absent tensors are skipped.
void reorder_gdn_value_heads(WeightStore& w, const ModelConfig& c, GdnHeadMap from, GdnHeadMap to);

// Position in `to` order of the value head at position `h` of `from` order.
int gdn_value_head_position(const ModelConfig& c, int h, GdnHeadMap from, GdnHeadMap to);

// Splits the fused tensors blk.N.fused_qkvz.weight / blk.N.fused_ba.weight of `m` (either
// layout's names, canonicalised by the loader) into attn_qkv, attn_gate, ssm_beta and
// ssm_alpha, value heads in grouped order. `source` names the file or directory in errors.
void split_fused_gdn(Model& m, const std::string& source);

// The inverse, as llama.cpp's Qwen3-Next GGUFs store it: every GDN layer's attn_qkv, attn_gate,
// ssm_beta and ssm_alpha of `w` (value heads grouped) replaced by blk.N.ssm_in.weight and
// blk.N.ssm_beta_alpha.weight.
void fuse_gdn_projections(WeightStore& w, const ModelConfig& c);

}  // namespace ds::ref
