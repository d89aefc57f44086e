// Qwen3-Next / Qwen3.5 full-attention layer (reference-math.md §1.5): q_proj packs [q | gate]
// per head, (1 + w) QK-norms, partial NEOX RoPE, attention output gated by sigmoid(gate).
#include <cmath>

#include "block.h"
#include "ops.h"

namespace ds::ref {

TensorMap gated_attn_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st) {
  const auto& cfg = c.cfg;
  c.check_position(st, pos0);
  const int d = cfg.head_dim;
  TensorMap s;
  s["attn_norm"] = c.stage(rmsnorm(x, c.lw("attn_norm.weight"), cfg.norm_eps, cfg.norm_plus_one, cfg.hidden));
  const Tensor qg = linear(s["attn_norm"], c.lw("attn_q.weight"), c.lb("attn_q.bias"));
  s["q"] = c.stage(take_columns(qg, 2 * d, 0, d));
  s["attn_gate"] = c.stage(take_columns(qg, 2 * d, d, d));
  s["k"] = c.stage(linear(s["attn_norm"], c.lw("attn_k.weight"), c.lb("attn_k.bias")));
  s["v"] = c.stage(linear(s["attn_norm"], c.lw("attn_v.weight"), c.lb("attn_v.bias")));
  const char* q_in = "q";
  const char* k_in = "k";
  if (cfg.qk_norm) {
    s["q_norm"] = c.stage(rmsnorm(s["q"], c.lw("attn_q_norm.weight"), cfg.norm_eps, cfg.norm_plus_one, d));
    s["k_norm"] = c.stage(rmsnorm(s["k"], c.lw("attn_k_norm.weight"), cfg.norm_eps, cfg.norm_plus_one, d));
    q_in = "q_norm";
    k_in = "k_norm";
  }
  s["q_rope"] =
      c.stage(rope(s[q_in], d, cfg.rotary_dim(), pos0, cfg.rope_theta, cfg.rope_mode, cfg.rope_freq_factors));
  s["k_rope"] =
      c.stage(rope(s[k_in], d, cfg.rotary_dim(), pos0, cfg.rope_theta, cfg.rope_mode, cfg.rope_freq_factors));
  append_kv(st, s["k_rope"], s["v"]);
  s["attn"] = c.stage(attention(s["q_rope"], st.k, st.v, cfg.n_heads, cfg.n_kv_heads, d, pos0,
                                {1.0 / std::sqrt(double(d)), false}));
  s["attn_gated"] = c.stage(sigmoid_mul(s["attn"], s["attn_gate"]));
  s["attn_out"] = c.stage(linear(s["attn_gated"], c.lw("attn_output.weight"), c.lb("attn_output.bias")));
  s["residual_1"] = c.stage(add(x, s["attn_out"]));
  swiglu_mlp(c, s);
  st.positions += int(x.dim(0));
  return s;
}

}  // namespace ds::ref
