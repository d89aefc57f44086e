#include "reference.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "ops.h"
#include "stage_catalog.h"

namespace ds::ref {

Reference::Reference(const Model& model, ReferenceOptions options)
    : cfg_(model.config), opt_(options), cache_(std::size_t(model.config.n_layers)) {
  cfg_.validate();
  for (const auto& [name, t] : model.weights.all()) w64_.put(name, t.to(DType::f64));
}

const Tensor* Reference::w_opt(std::string_view name) const { return w64_.find(name); }
const Tensor& Reference::w(std::string_view name) const { return w64_.get(name); }

Tensor Reference::round_stage_(const Tensor& t) const { return round_stage(t, opt_.storage); }

void Reference::reset() {
  for (auto& c : cache_) c = {};
}

TensorMap Reference::embed(std::span<const std::int32_t> tokens, int pos0) const {
  Tensor e = ref::embed(tokens, w("token_embd.weight"));
  if (const Tensor* pos = w_opt("position_embd.weight")) {
    for (std::int64_t t = 0; t < e.dim(0); ++t)
      for (std::int64_t i = 0; i < e.dim(1); ++i)
        e.data<double>()[t * e.dim(1) + i] += pos->data<double>()[(pos0 + t) * e.dim(1) + i];
  }
  TensorMap out;
  out["embed"] = stage(e);
  return out;
}

TensorMap Reference::head(const Tensor& x) const {
  TensorMap out;
  Tensor n = cfg_.family == Family::gpt2
                 ? layernorm(x, w("output_norm.weight"), w("output_norm.bias"), cfg_.norm_eps)
                 : rmsnorm(x, w("output_norm.weight"), cfg_.norm_eps, cfg_.norm_plus_one, cfg_.hidden);
  out["final_norm"] = stage(n);
  const Tensor* lm = w_opt("output.weight");
  out["logits"] = stage(linear(out["final_norm"], lm ? *lm : w("token_embd.weight"), nullptr));
  return out;
}

TensorMap Reference::layer(int layer, const Tensor& x, int pos0) {
  switch (cfg_.block_kind(layer)) {
    case BlockKind::decoder: return decoder_layer(layer, x, pos0);
    default:
      throw std::invalid_argument(fmt::format("reference: block kind {} of layer {} is not implemented",
                                              block_kind_name(cfg_.block_kind(layer)), layer));
  }
}

// LLaMA / Mistral / Qwen2 / Qwen3 pre-norm block (reference-math.md §1.1-1.4).
TensorMap Reference::decoder_layer(int l, const Tensor& x, int pos0) {
  const auto& c = cfg_;
  auto lw = [&](std::string_view role) -> const Tensor& { return w(layer_weight(l, role)); };
  auto lb = [&](std::string_view role) { return w_opt(layer_weight(l, role)); };
  TensorMap s;
  s["attn_norm"] = stage(rmsnorm(x, lw("attn_norm.weight"), c.norm_eps, c.norm_plus_one, c.hidden));
  s["q"] = stage(linear(s["attn_norm"], lw("attn_q.weight"), lb("attn_q.bias")));
  s["k"] = stage(linear(s["attn_norm"], lw("attn_k.weight"), lb("attn_k.bias")));
  s["v"] = stage(linear(s["attn_norm"], lw("attn_v.weight"), lb("attn_v.bias")));
  const Tensor* q_in = &s["q"];
  const Tensor* k_in = &s["k"];
  if (c.qk_norm) {
    s["q_norm"] = stage(rmsnorm(s["q"], lw("attn_q_norm.weight"), c.norm_eps, c.norm_plus_one, c.head_dim));
    s["k_norm"] = stage(rmsnorm(s["k"], lw("attn_k_norm.weight"), c.norm_eps, c.norm_plus_one, c.head_dim));
    q_in = &s["q_norm"];
    k_in = &s["k_norm"];
  }
  s["q_rope"] = stage(rope(*q_in, c.head_dim, c.rotary_dim(), pos0, c.rope_theta, c.rope_mode));
  s["k_rope"] = stage(rope(*k_in, c.head_dim, c.rotary_dim(), pos0, c.rope_theta, c.rope_mode));
  auto& cache = cache_[std::size_t(l)];
  if (cache.k.empty() ? pos0 != 0 : cache.k.dim(0) != pos0)
    throw std::logic_error(fmt::format("reference layer {}: step at position {} but the cache holds {}", l, pos0,
                                       cache.k.empty() ? 0 : cache.k.dim(0)));
  cache.k = Tensor::concat_rows(cache.k, s["k_rope"]);
  cache.v = Tensor::concat_rows(cache.v, s["v"]);
  s["attn"] = stage(attention(s["q_rope"], cache.k, cache.v, c.n_heads, c.n_kv_heads, c.head_dim, pos0,
                              1.0 / std::sqrt(double(c.head_dim))));
  s["attn_out"] = stage(linear(s["attn"], lw("attn_output.weight"), lb("attn_output.bias")));
  s["residual_1"] = stage(add(x, s["attn_out"]));
  s["ffn_norm"] = stage(rmsnorm(s["residual_1"], lw("ffn_norm.weight"), c.norm_eps, c.norm_plus_one, c.hidden));
  s["gate"] = stage(linear(s["ffn_norm"], lw("ffn_gate.weight"), lb("ffn_gate.bias")));
  s["up"] = stage(linear(s["ffn_norm"], lw("ffn_up.weight"), lb("ffn_up.bias")));
  s["ffn_act"] = stage(silu_mul(s["gate"], s["up"]));
  s["down"] = stage(linear(s["ffn_act"], lw("ffn_down.weight"), lb("ffn_down.bias")));
  s["residual_2"] = stage(add(s["residual_1"], s["down"]));
  return s;
}

}  // namespace ds::ref
