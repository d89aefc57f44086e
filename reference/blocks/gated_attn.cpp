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
  c.put(s, "attn_norm", c.rmsnorm(x, "attn_norm", cfg.hidden));
  const Tensor qg = c.linear(s["attn_norm"], "attn_q");
  c.put(s, "q", take_columns(qg, 2 * d, 0, d));
  c.put(s, "attn_gate", take_columns(qg, 2 * d, d, d));
  c.put(s, "k", c.linear(s["attn_norm"], "attn_k"));
  c.put(s, "v", c.linear(s["attn_norm"], "attn_v"));
  const char* q_in = "q";
  const char* k_in = "k";
  if (cfg.qk_norm) {
    c.put(s, "q_norm", c.rmsnorm(s["q"], "attn_q_norm", d));
    c.put(s, "k_norm", c.rmsnorm(s["k"], "attn_k_norm", d));
    q_in = "q_norm";
    k_in = "k_norm";
  }
  c.put(s, "q_rope", c.rope(s[q_in], d, pos0));
  c.put(s, "k_rope", c.rope(s[k_in], d, pos0));
  c.append_kv(st, s["k_rope"], s["v"]);
  c.put(s, "attn", c.attention(s["q_rope"], st, d, pos0, {1.0 / std::sqrt(double(d)), false}, 0));
  c.put(s, "attn_gated", sigmoid_mul(s["attn"], s["attn_gate"]));
  c.put(s, "attn_out", c.linear(s["attn_gated"], "attn_output"));
  c.put(s, "residual_1", add(x, s["attn_out"]));
  ffn(c, s);
  st.positions += int(x.dim(0));
  return s;
}

}  // namespace ds::ref
