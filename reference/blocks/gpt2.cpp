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
  c.put(s, "ln_1", c.layernorm(x, "attn_norm"));
  c.put(s, "qkv", c.linear(s["ln_1"], "attn_qkv"));
  const Tensor q = take_columns(s["qkv"], 3 * D, 0, D);
  c.append_kv(st, take_columns(s["qkv"], 3 * D, D, D), take_columns(s["qkv"], 3 * D, 2 * D, D));
  const AttnScale scale{std::sqrt(double(cfg.head_dim)), cfg.attn_scale_divide};
  c.put(s, "attn",
        c.attention(q, st, cfg.head_dim, pos0,
                    cfg.attn_scale_divide ? scale : AttnScale{1.0 / scale.value, false}, 0));
  c.put(s, "attn_out", c.linear(s["attn"], "attn_output"));
  c.put(s, "residual_1", add(x, s["attn_out"]));
  c.put(s, "ln_2", c.layernorm(s["residual_1"], "ffn_norm"));
  c.put(s, "fc", c.linear(s["ln_2"], "ffn_up"));
  c.put(s, "gelu", c.gelu(s["fc"]));
  c.put(s, "proj", c.linear(s["gelu"], "ffn_down"));
  c.put(s, "residual_2", add(s["residual_1"], s["proj"]));
  st.positions += int(x.dim(0));
  return s;
}

}  // namespace ds::ref
