// GPT-2 block (reference-math.md §1.6): LayerNorm with bias, fused c_attn, MHA with scores
// divided by sqrt(d), gelu_new MLP, biases everywhere. Weights are [out, in] (Conv1D
// transposed by the loaders), so this is plain `linear`.
#include <cmath>

#include "block.h"
#include "ops.h"

namespace ds::ref {

TensorMap gpt2_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st) {
  const auto& cfg = c.cfg;
  c.check_position(st, pos0);
  const int D = cfg.hidden;
  TensorMap s;
  s["ln_1"] = c.stage(layernorm(x, c.lw("attn_norm.weight"), c.lw("attn_norm.bias"), cfg.norm_eps));
  s["qkv"] = c.stage(linear(s["ln_1"], c.lw("attn_qkv.weight"), c.lb("attn_qkv.bias")));
  const Tensor q = take_columns(s["qkv"], 3 * D, 0, D);
  append_kv(st, take_columns(s["qkv"], 3 * D, D, D), take_columns(s["qkv"], 3 * D, 2 * D, D));
  const AttnScale scale{std::sqrt(double(cfg.head_dim)), cfg.attn_scale_divide};
  s["attn"] = c.stage(attention(q, st.k, st.v, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, pos0,
                                cfg.attn_scale_divide ? scale : AttnScale{1.0 / scale.value, false}));
  s["attn_out"] = c.stage(linear(s["attn"], c.lw("attn_output.weight"), c.lb("attn_output.bias")));
  s["residual_1"] = c.stage(add(x, s["attn_out"]));
  s["ln_2"] =
      c.stage(layernorm(s["residual_1"], c.lw("ffn_norm.weight"), c.lw("ffn_norm.bias"), cfg.norm_eps));
  s["fc"] = c.stage(linear(s["ln_2"], c.lw("ffn_up.weight"), c.lb("ffn_up.bias")));
  s["gelu"] = c.stage(gelu_new(s["fc"]));
  s["proj"] = c.stage(linear(s["gelu"], c.lw("ffn_down.weight"), c.lb("ffn_down.bias")));
  s["residual_2"] = c.stage(add(s["residual_1"], s["proj"]));
  st.positions += int(x.dim(0));
  return s;
}

}  // namespace ds::ref
