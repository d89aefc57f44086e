// LLaMA / Mistral / Qwen2 / Qwen3 pre-norm block (reference-math.md §1.1-1.4). The families
// differ only in config flags: q/k/v bias (Qwen2), per-head QK-norm before RoPE (Qwen3), a
// mixture-of-experts FFN (Qwen3-MoE, Mixtral; blocks/moe.cpp).
#include <cmath>

#include "block.h"
#include "ops.h"

namespace ds::ref {

TensorMap decoder_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st) {
  const auto& cfg = c.cfg;
  c.check_position(st, pos0);
  TensorMap s;
  s["attn_norm"] = c.stage(c.rmsnorm(x, "attn_norm", cfg.hidden));
  s["q"] = c.stage(c.linear(s["attn_norm"], "attn_q"));
  s["k"] = c.stage(c.linear(s["attn_norm"], "attn_k"));
  s["v"] = c.stage(c.linear(s["attn_norm"], "attn_v"));
  const char* q_in = "q";
  const char* k_in = "k";
  if (cfg.qk_norm) {
    s["q_norm"] =
        c.stage(c.rmsnorm(s["q"], "attn_q_norm", cfg.head_dim));
    s["k_norm"] =
        c.stage(c.rmsnorm(s["k"], "attn_k_norm", cfg.head_dim));
    q_in = "q_norm";
    k_in = "k_norm";
  }
  s["q_rope"] = c.stage(c.rope(s[q_in], cfg.head_dim, pos0));
  s["k_rope"] = c.stage(c.rope(s[k_in], cfg.head_dim, pos0));
  c.append_kv(st, s["k_rope"], s["v"]);
  s["attn"] = c.stage(c.attention(s["q_rope"], st, cfg.head_dim, pos0, {1.0 / std::sqrt(double(cfg.head_dim)), false},
                                  cfg.sliding_window));
  s["attn_out"] = c.stage(c.linear(s["attn"], "attn_output"));
  s["residual_1"] = c.stage(add(x, s["attn_out"]));
  if (cfg.moe())
    moe_mlp(c, s);
  else
    swiglu_mlp(c, s);
  st.positions += int(x.dim(0));
  return s;
}

}  // namespace ds::ref
