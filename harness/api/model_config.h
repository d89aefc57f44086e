// ModelConfig: everything about a model's shape and math that a block needs, read from a
// synthetic preset, a GGUF header or an HF config.json. Where public implementations
// disagree (see docs/reference-math.md [DIFF]), the choice is an explicit field here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ops.h"

namespace ds {

// qwen35: the dense Qwen3.5 hybrid (Gated DeltaNet + gated attention, dense MLP), llama.cpp's `qwen35`.
// qwen3next: the same hybrid with a mixture-of-experts FFN plus a gated shared expert in every
// layer (Qwen3-Next-80B-A3B; llama.cpp's `qwen3next`). qwen3moe: Qwen3 attention
// with a mixture-of-experts FFN in every layer (llama.cpp's `qwen3moe`). Mixtral is the llama
// family with experts (llama.cpp writes it as `llama` with expert_count > 0).
enum class Family { llama, qwen2, qwen3, gpt2, qwen35, qwen3moe, qwen3next };
// What one layer computes. `embed` and `head` are the model-level pseudo blocks.
enum class BlockKind { decoder, gpt2, gdn, gated_attn, embed, head };
enum class RopeMode { normal, neox };      // pairs (2i, 2i+1) vs (i, i + R/2)
enum class GdnHeadMap { grouped, tiled };  // value head h reads key head floor(h/rho) vs h mod n_k
// Orientation of one value head's recurrent state in the `gdn_state` stage: HF/FLA keep
// S[key][value] row-major, ggml keeps the transpose (one contiguous row per value index).
enum class GdnStateLayout { key_major, value_major };
// How many raw pre-conv inputs the decode conv state keeps: HF caches K, ggml K-1 (only the
// last K-1 ever reach an output, so both give identical results; only the stage differs).
enum class ConvStateLen { k_minus_1, k };
// How a mixture-of-experts router turns its logits into the chosen experts' weights:
// softmax_topk: softmax over every expert's logit, then the k largest probabilities (Qwen3-MoE,
//   Qwen2-MoE; renormalised to sum 1 when moe_norm_topk, HF's norm_topk_prob);
// topk_softmax: the k largest logits, then a softmax over those k only (Mixtral).
// Both rank experts by value, ties going to the lower expert index (docs/moe.md).
enum class MoeRouting { softmax_topk, topk_softmax };

std::string_view family_name(Family f);
std::string_view block_kind_name(BlockKind k);
std::string_view rope_mode_name(RopeMode m);
std::string_view gdn_head_map_name(GdnHeadMap m);
std::string_view moe_routing_name(MoeRouting r);

struct ModelConfig {
  std::string name;  // e.g. "synthetic:qwen2-tiny" or a file path
  // Architecture string as the source spelled it ("llama", "mistral", "qwen2.5", ...); the
  // contracts resolve aliases of it. Empty means family_name(family).
  std::string arch;
  Family family = Family::llama;
  int n_layers = 0;
  int hidden = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;
  int vocab = 0;
  int max_positions = 2048;
  // Mistral sliding-window attention: a query sees only the last `sliding_window` positions
  // (itself included). 0 = full causal attention.
  int sliding_window = 0;  // learned absolute positions (gpt2) and RoPE sanity bound
  double rope_theta = 10000.0;
  double norm_eps = 1e-6;
  double partial_rotary = 1.0;  // fraction of head_dim that RoPE rotates
  RopeMode rope_mode = RopeMode::neox;
  // q/k projection rows are in llama.cpp's GGUF order (interleaved pairs per head), so the q,
  // k, q_rope and k_rope stages are a per-head permutation of the HF ones; implies normal RoPE.
  bool qk_rows_permuted = false;
  // Per rotary pair i, inv_freq[i] is divided by rope_freq_factors[i] (Llama-3 "llama3" rope
  // scaling; GGUF rope_freqs). Empty: no scaling.
  std::vector<double> rope_freq_factors;
  bool qkv_bias = false;  // q/k/v projections carry a bias (qwen2, gpt2)
  bool o_bias = false;    // attention output projection bias (gpt2)
  bool mlp_bias = false;  // gate/up/down (or fc/proj) bias
  bool qk_norm = false;   // per-head RMSNorm on q and k before RoPE (qwen3, qwen35)
  bool tied_embeddings = false;
  bool norm_plus_one = false;  // RMSNorm weight applied as (1 + w) (qwen35)
  // Attention scores: GPT-2 divides by sqrt(d); LLaMA/Qwen multiply by d^-0.5. The two round
  // differently, which only a bit-exact candidate notices, but the oracle follows each source.
  bool attn_scale_divide = false;

  // Gated DeltaNet (qwen35) linear-attention layers.
  int full_attention_interval = 4;  // every n-th layer is full (gated) attention
  int gdn_k_heads = 0;
  int gdn_v_heads = 0;
  int gdn_k_dim = 0;
  int gdn_v_dim = 0;
  int conv_kernel = 4;
  GdnHeadMap gdn_head_map = GdnHeadMap::grouped;
  GdnStateLayout gdn_state_layout = GdnStateLayout::key_major;
  ConvStateLen conv_state_len = ConvStateLen::k_minus_1;
  // The fused GDN decode ops (A-D: GdnInplace, GdnInplaceIds, SsmConvUpdate,
  // SsmConvUpdateIds) the plan emits for decode steps, as a model graph would; empty: the plain
  // ops. Set from `driftscope run --gdn-variant`; the capability gate requires each of them.
  OpSet gdn_fused;

  // Mixture-of-experts FFN (0 experts: the dense MLP). Each expert is a SwiGLU MLP of width
  // expert_ffn; a token runs through n_experts_used of them, combined by the router's weights.
  int n_experts = 0;
  int n_experts_used = 0;  // top-k
  int expert_ffn = 0;      // HF moe_intermediate_size (Mixtral: intermediate_size)
  MoeRouting moe_routing = MoeRouting::softmax_topk;
  bool moe_norm_topk = false;  // renormalise the chosen softmax_topk weights to sum 1
  // Qwen3-Next's shared expert: a SwiGLU MLP of this width every token runs through, scaled by
  // sigmoid(x . shared_expert_gate) and added to the routed output. 0: none.
  int shared_expert_ffn = 0;

  std::vector<BlockKind> layer_kinds;  // one per layer

  BlockKind block_kind(int layer) const;
  bool moe() const { return n_experts > 0; }
  bool shared_expert() const { return moe() && shared_expert_ffn > 0; }
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  int rotary_dim() const;
  int gdn_key_dim() const { return gdn_k_heads * gdn_k_dim; }
  int gdn_value_dim() const { return gdn_v_heads * gdn_v_dim; }
  int gdn_conv_dim() const { return 2 * gdn_key_dim() + gdn_value_dim(); }
  int conv_state_rows() const { return conv_state_len == ConvStateLen::k ? conv_kernel : conv_kernel - 1; }
  // Key head read by value head h under gdn_head_map.
  int gdn_key_head(int h) const;
  std::string_view arch_name() const { return arch.empty() ? family_name(family) : std::string_view(arch); }
  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
};

}  // namespace ds
