// The shapes bench/kernels runs at. Every decoder number comes from a preset of
// reference/synthetic.cpp (the same configs `driftscope run synthetic:<preset>` uses), so a
// preset edit moves the benchmark with it; only shapes the repo has no preset for are spelled
// out here, with where they come from.
//
// The cuda backend runs the real shapes. The simt backend runs each real shape's tiny sibling
// preset of the same family: every CUDA thread is a fiber there, so real shapes would take
// minutes per case, and those cases exist to keep every launch path building, running and
// matching a host computation (the ctest smoke), not to measure anything.
#pragma once

#include <string>
#include <vector>

#include "synthetic.h"

namespace dsb {

// A dense decoder layer as the cuda candidate runs it (fused QKV, RoPE, GQA, SwiGLU).
struct Decoder {
  std::string name;
  int hidden = 0, n_heads = 0, n_kv = 0, head_dim = 0, ffn = 0, vocab = 0, rotary_dim = 0;
  float eps = 1e-6f, theta = 10000.0f;
  std::vector<float> freq_factors;  // RoPE scaling per rotary pair (Llama 3); empty: none
  bool neox = true, qkv_bias = false;
  bool ffn_only = false;  // only the FFN half (norm, gate_up, swiglu, down) is meaningful
};

// A Gated DeltaNet layer: key / value heads and dims, and the causal conv over q|k|v.
struct Gdn {
  std::string name;
  int nk = 0, nv = 0, dk = 0, dv = 0, conv_k = 4;
  int hidden = 0;  // the layer's input width (its projections' columns)
  int conv_channels() const { return 2 * nk * dk + nv * dv; }
};

// Token counts: decode is one token at position decode_pos0 (so attention reads a cache of
// decode_pos0 + 1 rows); prefill is a prompt of prefill_T tokens from position 0. The GDN
// decode ops run n_seqs sequences at once, as a batched server would.
struct Steps {
  int prefill_T = 128;
  int decode_pos0 = 1023;
  int n_seqs = 4;
};

inline Decoder from_preset(const char* preset) {
  const ds::ModelConfig c = ds::ref::synthetic_config(preset);
  Decoder d;
  d.name = preset;
  d.hidden = c.hidden, d.n_heads = c.n_heads, d.n_kv = c.n_kv_heads, d.head_dim = c.head_dim;
  d.ffn = c.ffn, d.vocab = c.vocab, d.rotary_dim = c.rotary_dim();
  d.eps = static_cast<float>(c.norm_eps), d.theta = static_cast<float>(c.rope_theta);
  d.neox = c.rope_mode == ds::RopeMode::neox, d.qkv_bias = c.qkv_bias;
  d.freq_factors.assign(c.rope_freq_factors.begin(), c.rope_freq_factors.end());
  return d;
}

inline Gdn gdn_from_preset(const char* preset) {
  const ds::ModelConfig c = ds::ref::synthetic_config(preset);
  return {preset, c.gdn_k_heads, c.gdn_v_heads, c.gdn_k_dim, c.gdn_v_dim, c.conv_kernel, c.hidden};
}

// LLaMA-2-7B's FFN (hidden 4096, intermediate 11008): no preset holds a 7B model. Its smoke
// sibling keeps the ratio at 1/32 of each width.
inline Decoder ffn_7b(bool smoke) {
  Decoder d;
  d.name = smoke ? "7b-ffn-div32" : "7b-ffn";
  d.hidden = smoke ? 128 : 4096;
  d.ffn = smoke ? 344 : 11008;
  d.eps = 1e-5f;
  d.ffn_only = true;
  return d;
}

// Qwen3-Next-80B-A3B's linear-attention layer (its published config.json: 16 key heads and 32
// value heads of 128, conv kernel 4, as the qwen3-next-80b-a3b preset has it); the smoke shape
// is the dense hybrid's tiny preset, whose GDN layer is qwen3next-tiny's.
inline Gdn gdn_shape(bool smoke) {
  if (smoke) return gdn_from_preset("qwen35-tiny");
  return {"qwen3-next-80b", 16, 32, 128, 128, 4, 2048};
}

// A mixture-of-experts FFN: the router over `experts`, the top `top_k` of them per token, each a
// SwiGLU MLP of width expert_ffn (qwen3-30b-a3b; qwen3moe-tiny its smoke sibling).
struct Moe {
  std::string name;
  int hidden = 0, experts = 0, top_k = 0, expert_ffn = 0;
  bool softmax_topk = true, norm_topk = true;
};

inline Moe moe_shape(bool smoke) {
  const char* preset = smoke ? "qwen3moe-tiny" : "qwen3-30b-a3b";
  const ds::ModelConfig c = ds::ref::synthetic_config(preset);
  return {preset,           c.hidden,     c.n_experts,
          c.n_experts_used, c.expert_ffn, c.moe_routing == ds::MoeRouting::softmax_topk,
          c.moe_norm_topk};
}

inline std::vector<Decoder> decoder_shapes(bool smoke) {
  // llama3-tiny, not llama-tiny: llama3.2-1b's RoPE has Llama-3 frequency factors, and so does it.
  if (smoke) return {from_preset("qwen2-tiny"), from_preset("llama3-tiny"), ffn_7b(true)};
  return {from_preset("qwen2.5-0.5b"), from_preset("llama3.2-1b"), ffn_7b(false)};
}

inline Steps steps(bool smoke) {
  if (smoke) return {8, 31, 4};
  return {};
}

}  // namespace dsb
