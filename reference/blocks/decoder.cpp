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
  c.put(s, "attn_norm", c.rmsnorm(x, "attn_norm", cfg.hidden));
  c.put(s, "q", c.linear(s["attn_norm"], "attn_q"));
  c.put(s, "k", c.linear(s["attn_norm"], "attn_k"));
  c.put(s, "v", c.linear(s["attn_norm"], "attn_v"));
  const char* q_in = "q";
  const char* k_in = "k";
  if (cfg.qk_norm) {
    c.put(s, "q_norm", c.rmsnorm(s["q"], "attn_q_norm", cfg.head_dim));
    c.put(s, "k_norm", c.rmsnorm(s["k"], "attn_k_norm", cfg.head_dim));
    q_in = "q_norm";
    k_in = "k_norm";
  }
  c.put(s, "q_rope", c.rope(s[q_in], cfg.head_dim, pos0));
  c.put(s, "k_rope", c.rope(s[k_in], cfg.head_dim, pos0));
  c.append_kv(st, s["k_rope"], s["v"]);
  c.put(s, "attn",
        c.attention(s["q_rope"], st, cfg.head_dim, pos0, {1.0 / std::sqrt(double(cfg.head_dim)), false},
                    cfg.sliding_window));
  c.put(s, "attn_out", c.linear(s["attn"], "attn_output"));
  c.put(s, "residual_1", add(x, s["attn_out"]));
  ffn(c, s);
  st.positions += int(x.dim(0));
  return s;
}

}  // namespace ds::ref
