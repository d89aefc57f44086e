#include "gdn_layout.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "model_error.h"

namespace ds::ref {

namespace {

// The value-head permutation from `from` to `to` order: dst[i] = src[perm[i]].
std::vector<std::int64_t> source_of(const ModelConfig& c, GdnHeadMap from, GdnHeadMap to) {
  const int nv = c.gdn_v_heads;
  std::vector<std::int64_t> perm(std::size_t(nv), 0);
  for (int h = 0; h < nv; ++h) perm[std::size_t(gdn_value_head_position(c, h, from, to))] = h;
  return perm;
}

// Permutes `heads` blocks of `block` units, starting at unit `first`, of a tensor seen as
// [outer, units, inner] (units: rows of a matrix, or columns with outer = rows).
void permute_blocks(Tensor& t, std::int64_t outer, std::int64_t units, std::size_t inner_bytes,
                    std::int64_t first, std::int64_t block, const std::vector<std::int64_t>& perm) {
  const Tensor src = t;
  const std::size_t block_bytes = std::size_t(block) * inner_bytes;
  for (std::int64_t o = 0; o < outer; ++o) {
    const std::size_t line = std::size_t(o * units) * inner_bytes + std::size_t(first) * inner_bytes;
    for (std::size_t i = 0; i < perm.size(); ++i)
      std::memcpy(t.raw() + line + i * block_bytes, src.raw() + line + std::size_t(perm[i]) * block_bytes,
                  block_bytes);
  }
}

void permute_rows(WeightStore& w, const std::string& name, std::int64_t first, std::int64_t block,
                  const std::vector<std::int64_t>& perm) {
  Tensor* t = w.find_mutable(name);
  if (!t) return;
  const std::int64_t rows = t->dim(0), need = first + block * std::int64_t(perm.size());
  if (rows < need)
    throw ModelError(fmt::format("tensor {}: {} has fewer than the {} rows its value heads need", name,
                                 shape_str(t->shape()), need));
  permute_blocks(*t, 1, rows, t->nbytes() / std::size_t(rows), first, block, perm);
}

void permute_columns(WeightStore& w, const std::string& name, std::int64_t block,
                     const std::vector<std::int64_t>& perm) {
  Tensor* t = w.find_mutable(name);
  if (!t) return;
  if (t->rank() != 2 || t->dim(1) != block * std::int64_t(perm.size()))
    throw ModelError(fmt::format("tensor {}: {} is not [rows, {}] value-head columns", name,
                                 shape_str(t->shape()), block * std::int64_t(perm.size())));
  permute_blocks(*t, t->dim(0), t->dim(1), dtype_size(t->dtype()), 0, block, perm);
}

// Rows [begin, begin + count) of each of `groups` consecutive blocks of `block` rows.
Tensor gather_rows(const Tensor& t, std::int64_t groups, std::int64_t block, std::int64_t begin,
                   std::int64_t count) {
  Tensor out(t.dtype(), {groups * count, t.dim(1)});
  const std::size_t row = t.nbytes() / std::size_t(t.dim(0));
  for (std::int64_t g = 0; g < groups; ++g)
    std::memcpy(out.raw() + std::size_t(g * count) * row, t.raw() + std::size_t(g * block + begin) * row,
                std::size_t(count) * row);
  return out;
}

// Rows of `parts` interleaved group by group: for each of `groups` groups, each part's
// `count` rows of that group in turn (the inverse of gather_rows over the parts).
Tensor interleave_rows(const std::vector<std::pair<const Tensor*, std::int64_t>>& parts,
                       std::int64_t groups) {
  std::int64_t block = 0;
  for (const auto& [t, count] : parts) block += count;
  const Tensor& first = *parts.front().first;
  Tensor out(first.dtype(), {groups * block, first.dim(1)});
  const std::size_t row = first.nbytes() / std::size_t(first.dim(0));
  std::size_t at = 0;
  for (std::int64_t g = 0; g < groups; ++g)
    for (const auto& [t, count] : parts) {
      std::memcpy(out.raw() + at, t->raw() + std::size_t(g * count) * row, std::size_t(count) * row);
      at += std::size_t(count) * row;
    }
  return out;
}

}  // namespace

int gdn_value_head_position(const ModelConfig& c, int h, GdnHeadMap from, GdnHeadMap to) {
  if (from == to) return h;
  const int nk = c.gdn_k_heads, rho = c.gdn_v_heads / c.gdn_k_heads;
  // Grouped position k * rho + j and tiled position j * nk + k are the same head (key head k,
  // its j-th value head).
  if (from == GdnHeadMap::grouped) return (h % rho) * nk + h / rho;
  return (h % nk) * rho + h / nk;
}

void reorder_gdn_value_heads(WeightStore& w, const ModelConfig& c, GdnHeadMap from, GdnHeadMap to) {
  if (from == to || c.gdn_k_heads <= 0 || c.gdn_v_heads == c.gdn_k_heads) return;
  const auto perm = source_of(c, from, to);
  const std::int64_t dv = c.gdn_v_dim, values_at = 2 * std::int64_t(c.gdn_key_dim());
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.block_kind(l) != BlockKind::gdn) continue;
    permute_rows(w, layer_weight(l, "attn_qkv.weight"), values_at, dv, perm);
    permute_rows(w, layer_weight(l, "ssm_conv1d.weight"), values_at, dv, perm);
    permute_rows(w, layer_weight(l, "attn_gate.weight"), 0, dv, perm);
    for (const char* role : {"ssm_beta.weight", "ssm_alpha.weight", "ssm_dt.bias", "ssm_a"})
      permute_rows(w, layer_weight(l, role), 0, 1, perm);
    permute_columns(w, layer_weight(l, "ssm_out.weight"), dv, perm);
  }
}

void split_fused_gdn(Model& m, const std::string& source) {
  const auto& c = m.config;
  const std::int64_t nk = c.gdn_k_heads, dk = c.gdn_k_dim,
                     rv = std::int64_t(c.gdn_v_heads / c.gdn_k_heads) * c.gdn_v_dim,
                     rho = c.gdn_v_heads / c.gdn_k_heads;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string qkvz = layer_weight(l, "fused_qkvz.weight"), ba = layer_weight(l, "fused_ba.weight");
    if (const Tensor* w = m.weights.find(qkvz)) {
      const std::int64_t block = 2 * dk + 2 * rv;
      if (w->rank() != 2 || w->dim(0) != nk * block)
        throw ModelError(fmt::format("{}: tensor {}: expected {} rows, got {}", source, qkvz, nk * block,
                                     shape_str(w->shape())));
      Tensor qkv = Tensor::concat_rows(gather_rows(*w, nk, block, 0, dk), gather_rows(*w, nk, block, dk, dk));
      qkv = Tensor::concat_rows(qkv, gather_rows(*w, nk, block, 2 * dk, rv));
      m.weights.put(layer_weight(l, "attn_qkv.weight"), std::move(qkv));
      m.weights.put(layer_weight(l, "attn_gate.weight"), gather_rows(*w, nk, block, 2 * dk + rv, rv));
      m.weights.erase(qkvz);
    }
    if (const Tensor* w = m.weights.find(ba)) {
      if (w->rank() != 2 || w->dim(0) != 2 * nk * rho)
        throw ModelError(fmt::format("{}: tensor {}: expected {} rows, got {}", source, ba, 2 * nk * rho,
                                     shape_str(w->shape())));
      m.weights.put(layer_weight(l, "ssm_beta.weight"), gather_rows(*w, nk, 2 * rho, 0, rho));
      m.weights.put(layer_weight(l, "ssm_alpha.weight"), gather_rows(*w, nk, 2 * rho, rho, rho));
      m.weights.erase(ba);
    }
  }
}

void fuse_gdn_projections(WeightStore& w, const ModelConfig& c) {
  const std::int64_t nk = c.gdn_k_heads, dk = c.gdn_k_dim, key_dim = c.gdn_key_dim(),
                     rv = std::int64_t(c.gdn_v_heads / c.gdn_k_heads) * c.gdn_v_dim,
                     rho = c.gdn_v_heads / c.gdn_k_heads;
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.block_kind(l) != BlockKind::gdn) continue;
    const std::string qkv_name = layer_weight(l, "attn_qkv.weight"),
                      z_name = layer_weight(l, "attn_gate.weight"),
                      b_name = layer_weight(l, "ssm_beta.weight"),
                      a_name = layer_weight(l, "ssm_alpha.weight");
    const Tensor qkv = w.get(qkv_name);
    const Tensor q = qkv.rows(0, key_dim), k = qkv.rows(key_dim, 2 * key_dim),
                 v = qkv.rows(2 * key_dim, qkv.dim(0));
    w.put(layer_weight(l, "ssm_in.weight"),
          interleave_rows({{&q, dk}, {&k, dk}, {&v, rv}, {&w.get(z_name), rv}}, nk));
    w.put(layer_weight(l, "ssm_beta_alpha.weight"),
          interleave_rows({{&w.get(b_name), rho}, {&w.get(a_name), rho}}, nk));
    for (const auto& n : {qkv_name, z_name, b_name, a_name}) w.erase(n);
  }
}

}  // namespace ds::ref
