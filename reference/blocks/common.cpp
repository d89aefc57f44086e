#include <fmt/format.h>

#include <stdexcept>

#include "block.h"
#include "engine_ops.h"
#include "ops.h"

namespace ds::ref {

Tensor BlockContext::stage(const Tensor& t) const { return round_stage(t, storage); }

void BlockContext::put(TensorMap& s, std::string_view name, const Tensor& value) const {
  const std::string key(name);
  if (forced && own_values)
    if (auto it = forced->find(key); it != forced->end()) {
      (*own_values)[key] = stage(value);
      s[key] = it->second;
      return;
    }
  s[key] = stage(value);
}

void BlockContext::check_position(const LayerState& st, int pos0) const {
  if (st.positions != pos0)
    throw std::logic_error(
        fmt::format("reference layer {}: step at position {} but the layer has seen {} tokens", layer, pos0,
                    st.positions));
}

void ffn(const BlockContext& c, TensorMap& s) {
  if (c.cfg.moe())
    moe_mlp(c, s);
  else
    swiglu_mlp(c, s);
}

void swiglu_mlp(const BlockContext& c, TensorMap& s) {
  const auto& cfg = c.cfg;
  c.put(s, "ffn_norm", c.rmsnorm(s["residual_1"], "ffn_norm", cfg.hidden));
  c.put(s, "gate", c.linear(s["ffn_norm"], "ffn_gate"));
  c.put(s, "up", c.linear(s["ffn_norm"], "ffn_up"));
  c.put(s, "ffn_act", silu_mul(s["gate"], s["up"]));
  c.put(s, "down", c.linear(s["ffn_act"], "ffn_down"));
  c.put(s, "residual_2", add(s["residual_1"], s["down"]));
}

Tensor BlockContext::linear(const Tensor& x, std::string_view role) const {
  const std::string w = fmt::format("{}.weight", role), b = fmt::format("{}.bias", role);
  const std::string name = layer_weight(layer, w);
  return numerics_linear(x, weights.matrix(name), lb(b), numerics, model.file_type(name));
}

Tensor BlockContext::rope(const Tensor& x, int head_dim, int pos0) const {
  return engine_rope(x, head_dim, cfg.rotary_dim(), pos0, cfg.rope_theta, cfg.rope_mode,
                     cfg.rope_freq_factors, numerics.rope);
}

Tensor BlockContext::attention(const Tensor& q, const LayerState& st, int head_dim, int pos0, AttnScale scale,
                               int window) const {
  if (numerics.accum == Numerics::Accum::exact && numerics.attention == Numerics::Attention::exact &&
      !numerics.kv_cache)
    return ref::attention(q, st.k, st.v, cfg.n_heads, cfg.n_kv_heads, head_dim, pos0, scale, window);
  return engine_attention(q, st.k, st.v, cfg.n_heads, cfg.n_kv_heads, head_dim, pos0, scale, window,
                          numerics);
}

Tensor BlockContext::rmsnorm(const Tensor& x, std::string_view role, int width) const {
  return numerics_rmsnorm(x, lw(fmt::format("{}.weight", role)), cfg.norm_eps, cfg.norm_plus_one, width,
                          numerics);
}

Tensor BlockContext::layernorm(const Tensor& x, std::string_view role) const {
  return numerics_layernorm(x, lw(fmt::format("{}.weight", role)), lw(fmt::format("{}.bias", role)),
                            cfg.norm_eps, numerics);
}

Tensor BlockContext::gelu(const Tensor& x) const {
  return numerics.gelu == Numerics::Gelu::f16_table ? gelu_f16_table(x) : gelu_new(x);
}

void BlockContext::append_kv(LayerState& st, const Tensor& k, const Tensor& v) const {
  const DType kv = numerics.kv_cache.value_or(DType::f64);
  st.k = Tensor::concat_rows(st.k, round_stage(k, kv));
  st.v = Tensor::concat_rows(st.v, round_stage(v, kv));
}

}  // namespace ds::ref
