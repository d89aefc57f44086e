// Gated DeltaNet linear-attention layer (reference-math.md §3), Qwen3.5 projection layout
// (separate qkv / z / b / a), followed by the dense SwiGLU MLP.
//
// Stage layouts (2-D, as every stage):
//   conv_state [conv_state_rows(), conv_dim]: raw pre-conv q|k|v inputs, oldest row first;
//              K-1 rows (ggml) or K rows (HF) per cfg.conv_state_len.
//   gdn_state  key_major:   [n_v * d_k, d_v], row h*d_k + i holds S_h[i][:] (HF / FLA);
//              value_major: [n_v * d_v, d_k], row h*d_v + j holds S_h[:][j] (ggml).
#include <cmath>

#include "block.h"
#include "ops.h"

namespace ds::ref {

namespace {
Tensor state_stage(const ModelConfig& cfg, const std::vector<double>& S) {
  const std::int64_t nv = cfg.gdn_v_heads, dk = cfg.gdn_k_dim, dv = cfg.gdn_v_dim;
  const bool key_major = cfg.gdn_state_layout == GdnStateLayout::key_major;
  Tensor t(DType::f64, key_major ? Shape{nv * dk, dv} : Shape{nv * dv, dk});
  double* out = t.data<double>();
  for (std::int64_t h = 0; h < nv; ++h)
    for (std::int64_t i = 0; i < dk; ++i)
      for (std::int64_t j = 0; j < dv; ++j) {
        const double v = S[std::size_t((h * dk + i) * dv + j)];
        if (key_major)
          out[(h * dk + i) * dv + j] = v;
        else
          out[(h * dv + j) * dk + i] = v;
      }
  return t;
}
}  // namespace

std::vector<double> gdn_state_from_stage(const ModelConfig& cfg, const Tensor& stage) {
  const std::int64_t nv = cfg.gdn_v_heads, dk = cfg.gdn_k_dim, dv = cfg.gdn_v_dim;
  const bool key_major = cfg.gdn_state_layout == GdnStateLayout::key_major;
  std::vector<double> S(std::size_t(nv * dk * dv));
  for (std::int64_t h = 0; h < nv; ++h)
    for (std::int64_t i = 0; i < dk; ++i)
      for (std::int64_t j = 0; j < dv; ++j)
        S[std::size_t((h * dk + i) * dv + j)] =
            stage.at(key_major ? (h * dk + i) * dv + j : (h * dv + j) * dk + i);
  return S;
}

TensorMap gdn_block(const BlockContext& c, const Tensor& x, int pos0, LayerState& st) {
  const auto& cfg = c.cfg;
  c.check_position(st, pos0);
  const int key_dim = cfg.gdn_key_dim(), value_dim = cfg.gdn_value_dim(), dk = cfg.gdn_k_dim;
  if (st.conv.empty()) st.conv = Tensor(DType::f64, {cfg.conv_state_rows(), cfg.gdn_conv_dim()});
  TensorMap s;
  c.put(s, "attn_norm", c.rmsnorm(x, "attn_norm", cfg.hidden));
  c.put(s, "qkv_mixed", c.linear(s["attn_norm"], "attn_qkv"));
  c.put(s, "z_gate", c.linear(s["attn_norm"], "attn_gate"));
  c.put(s, "beta", gdn_beta(c.linear(s["attn_norm"], "ssm_beta")));
  c.put(s, "g", gdn_g(c.linear(s["attn_norm"], "ssm_alpha"), c.lw("ssm_a"), c.lw("ssm_dt.bias")));
  c.put(s, "conv", conv_silu(s["qkv_mixed"], c.lw("ssm_conv1d.weight"), st.conv));
  st.conv = c.stage(st.conv);
  s["conv_state"] = st.conv;
  const int conv_dim = cfg.gdn_conv_dim();
  c.put(s, "q_l2",
        l2norm(take_columns(s["conv"], conv_dim, 0, key_dim), dk, 1e-6, 1.0 / std::sqrt(double(dk))));
  c.put(s, "k_l2", l2norm(take_columns(s["conv"], conv_dim, key_dim, key_dim), dk, 1e-6, 1.0));
  const Tensor v = take_columns(s["conv"], conv_dim, 2 * key_dim, value_dim);
  c.put(s, "gdn_out",
        gdn_recurrence(cfg, s["q_l2"], s["k_l2"], v, s["g"], s["beta"], st.ssm,
                       c.numerics.accum == Numerics::Accum::f32));
  // The carried state is rounded like every stage: a candidate keeps it in its storage dtype.
  for (double& e : st.ssm) e = round_to(c.storage, e);
  s["gdn_state"] = state_stage(cfg, st.ssm);
  c.put(s, "gated_norm",
        gated_rmsnorm(s["gdn_out"], s["z_gate"], c.lw("ssm_norm.weight"), cfg.norm_eps, cfg.gdn_v_dim));
  c.put(s, "out_proj", c.linear(s["gated_norm"], "ssm_out"));
  c.put(s, "residual_1", add(x, s["out_proj"]));
  ffn(c, s);
  st.positions += int(x.dim(0));
  return s;
}

}  // namespace ds::ref
