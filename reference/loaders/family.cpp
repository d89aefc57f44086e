#include "family.h"

#include "contracts.h"

namespace ds::ref {

std::optional<Family> family_of(std::string_view arch) {
  const std::string canon = canonical_architecture(arch);
  if (canon == "llama") return Family::llama;
  if (canon == "qwen2") return Family::qwen2;
  if (canon == "qwen3") return Family::qwen3;
  if (canon == "gpt2") return Family::gpt2;
  if (canon == "qwen35") return Family::qwen35;
  if (canon == "qwen3moe") return Family::qwen3moe;
  if (canon == "qwen3next") return Family::qwen3next;
  if (canon == "mixtral") return Family::llama;  // llama with experts
  return std::nullopt;
}

bool family_has_experts(Family f) {
  return f == Family::qwen3moe || f == Family::llama || f == Family::qwen3next;
}

bool is_gdn_hybrid(Family f) { return f == Family::qwen35 || f == Family::qwen3next; }

void apply_family(ModelConfig& c) {
  BlockKind kind = BlockKind::decoder;
  switch (c.family) {
    case Family::llama: break;
    case Family::qwen2: c.qkv_bias = true; break;
    case Family::qwen3: c.qk_norm = true; break;
    case Family::gpt2:
      kind = BlockKind::gpt2;
      c.n_kv_heads = c.n_heads;
      c.qkv_bias = c.o_bias = c.mlp_bias = true;
      c.attn_scale_divide = true;
      c.rope_mode = RopeMode::neox;
      break;
    case Family::qwen35: c.qk_norm = true; break;
    case Family::qwen3next:
      c.qk_norm = true;
      c.moe_routing = MoeRouting::softmax_topk;
      break;
    case Family::qwen3moe:
      c.qk_norm = true;
      c.moe_routing = MoeRouting::softmax_topk;
      break;
  }
  // Mixtral (llama with experts): top-k of the logits, softmax over the chosen.
  if (c.family == Family::llama && c.moe()) c.moe_routing = MoeRouting::topk_softmax;
  c.layer_kinds.assign(std::size_t(c.n_layers), kind);
  if (is_gdn_hybrid(c.family) && c.full_attention_interval > 0)
    for (int l = 0; l < c.n_layers; ++l)
      c.layer_kinds[std::size_t(l)] =
          (l + 1) % c.full_attention_interval == 0 ? BlockKind::gated_attn : BlockKind::gdn;
}

void truncate_layers(ModelConfig& c, int layers) {
  if (layers > 0 && layers < c.n_layers) {
    c.n_layers = layers;
    c.layer_kinds.resize(std::size_t(layers));
  }
}

}  // namespace ds::ref
