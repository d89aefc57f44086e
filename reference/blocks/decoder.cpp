// LLaMA / Mistral / Qwen2 / Qwen3 pre-norm block (reference-math.md §1.1-1.4). The families
// differ only in config flags: q/k/v bias (Qwen2), per-head QK-norm before RoPE (Qwen3).
#include <cmath>

#include "block.h"
#include "ops.h"

namespace ds::ref {

TensorMap decoder_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st) {
  const auto& cfg = c.cfg;
  c.check_position(st, pos0);
  TensorMap s;
  s["attn_norm"] = c.stage(rmsnorm(x, c.lw("attn_norm.weight"), cfg.norm_eps, cfg.norm_plus_one, cfg.hidden));
  s["q"] = c.stage(linear(s["attn_norm"], c.lw("attn_q.weight"), c.lb("attn_q.bias")));
  s["k"] = c.stage(linear(s["attn_norm"], c.lw("attn_k.weight"), c.lb("attn_k.bias")));
  s["v"] = c.stage(linear(s["attn_norm"], c.lw("attn_v.weight"), c.lb("attn_v.bias")));
  const char* q_in = "q";
  const char* k_in = "k";
  if (cfg.qk_norm) {
    s["q_norm"] =
        c.stage(rmsnorm(s["q"], c.lw("attn_q_norm.weight"), cfg.norm_eps, cfg.norm_plus_one, cfg.head_dim));
    s["k_norm"] =
        c.stage(rmsnorm(s["k"], c.lw("attn_k_norm.weight"), cfg.norm_eps, cfg.norm_plus_one, cfg.head_dim));
    q_in = "q_norm";
    k_in = "k_norm";
  }
  s["q_rope"] = c.stage(rope(s[q_in], cfg.head_dim, cfg.rotary_dim(), pos0, cfg.rope_theta, cfg.rope_mode,
                             cfg.rope_freq_factors));
  s["k_rope"] = c.stage(rope(s[k_in], cfg.head_dim, cfg.rotary_dim(), pos0, cfg.rope_theta, cfg.rope_mode,
                             cfg.rope_freq_factors));
  append_kv(st, s["k_rope"], s["v"]);
  s["attn"] = c.stage(attention(s["q_rope"], st.k, st.v, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, pos0,
                                {1.0 / std::sqrt(double(cfg.head_dim)), false}, cfg.sliding_window));
  s["attn_out"] = c.stage(linear(s["attn"], c.lw("attn_output.weight"), c.lb("attn_output.bias")));
  s["residual_1"] = c.stage(add(x, s["attn_out"]));
  swiglu_mlp(c, s);
  st.positions += int(x.dim(0));
  return s;
}

}  // namespace ds::ref
