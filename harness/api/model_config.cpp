#include "model_config.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ds {

std::string_view family_name(Family f) {
  switch (f) {
    case Family::llama: return "llama";
    case Family::qwen2: return "qwen2";
    case Family::qwen3: return "qwen3";
    case Family::gpt2: return "gpt2";
    case Family::qwen35: return "qwen35";
    case Family::qwen3moe: return "qwen3moe";
    case Family::qwen3next: return "qwen3next";
  }
  return "?";
}

std::string_view block_kind_name(BlockKind k) {
  switch (k) {
    case BlockKind::decoder: return "decoder";
    case BlockKind::gpt2: return "gpt2";
    case BlockKind::gdn: return "gdn";
    case BlockKind::gated_attn: return "gated_attn";
    case BlockKind::embed: return "embed";
    case BlockKind::head: return "head";
  }
  return "?";
}

std::string_view rope_mode_name(RopeMode m) { return m == RopeMode::normal ? "normal" : "neox"; }

std::string_view gdn_head_map_name(GdnHeadMap m) { return m == GdnHeadMap::grouped ? "grouped" : "tiled"; }

std::string_view moe_routing_name(MoeRouting r) {
  return r == MoeRouting::softmax_topk ? "softmax_topk" : "topk_softmax";
}

int ModelConfig::gdn_key_head(int h) const {
  if (gdn_head_map == GdnHeadMap::tiled) return h % gdn_k_heads;
  return h / (gdn_v_heads / gdn_k_heads);
}

BlockKind ModelConfig::block_kind(int layer) const {
  if (layer >= 0 && layer < int(layer_kinds.size())) return layer_kinds[std::size_t(layer)];
  throw std::out_of_range(fmt::format("{}: no layer {} (model has {})", name, layer, n_layers));
}

int ModelConfig::rotary_dim() const {
  int r = int(double(head_dim) * partial_rotary + 0.5);
  return r - r % 2;
}

void ModelConfig::validate() const {
  auto fail = [&](std::string_view field, auto value) {
    throw std::invalid_argument(fmt::format("model {}: invalid {} = {}", name, field, value));
  };
  if (n_layers <= 0) fail("n_layers", n_layers);
  if (hidden <= 0) fail("hidden", hidden);
  if (n_heads <= 0) fail("n_heads", n_heads);
  if (n_kv_heads <= 0 || n_heads % n_kv_heads) fail("n_kv_heads", n_kv_heads);
  if (head_dim <= 0 || head_dim % 2) fail("head_dim", head_dim);
  if (ffn <= 0) fail("ffn", ffn);
  if (vocab <= 0) fail("vocab", vocab);
  if (int(layer_kinds.size()) != n_layers) fail("layer_kinds (count)", layer_kinds.size());
  if (!(norm_eps > 0)) fail("norm_eps", norm_eps);
  if (sliding_window < 0) fail("sliding_window", sliding_window);
  if (!(rope_theta > 0)) fail("rope_theta", rope_theta);
  if (!(partial_rotary > 0 && partial_rotary <= 1)) fail("partial_rotary", partial_rotary);
  if (qk_rows_permuted && rope_mode != RopeMode::normal)
    fail("rope_mode (permuted q/k rows need normal)", "neox");
  if (!rope_freq_factors.empty() && int(rope_freq_factors.size()) != rotary_dim() / 2)
    fail("rope_freq_factors (count)", rope_freq_factors.size());
  if (n_experts < 0) fail("n_experts", n_experts);
  if (moe()) {
    if (n_experts_used <= 0 || n_experts_used > n_experts) fail("n_experts_used", n_experts_used);
    if (expert_ffn <= 0) fail("expert_ffn", expert_ffn);
    if (shared_expert_ffn < 0) fail("shared_expert_ffn", shared_expert_ffn);
    for (BlockKind k : layer_kinds)
      if (k == BlockKind::gpt2)
        fail("layer_kinds (experts serve decoder, gdn and gated_attn layers)", block_kind_name(k));
  } else if (shared_expert_ffn != 0) {
    fail("shared_expert_ffn (a shared expert without routed experts)", shared_expert_ffn);
  }
  for (BlockKind k : layer_kinds) {
    if (k != BlockKind::gdn) continue;
    if (gdn_k_heads <= 0) fail("gdn_k_heads", gdn_k_heads);
    if (gdn_v_heads <= 0 || gdn_v_heads % gdn_k_heads) fail("gdn_v_heads", gdn_v_heads);
    if (gdn_k_dim <= 0) fail("gdn_k_dim", gdn_k_dim);
    if (gdn_v_dim <= 0) fail("gdn_v_dim", gdn_v_dim);
    if (conv_kernel < 2) fail("conv_kernel", conv_kernel);
    break;
  }
}

}  // namespace ds
