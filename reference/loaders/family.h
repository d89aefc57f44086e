// What a family fixes regardless of the file: flags the HF modeling code hard-codes (Qwen2's
// q/k/v bias, Qwen3's QK-norm, GPT-2's biases and score division) and the layer kinds.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "model_config.h"

namespace ds::ref {

// The largest value a checkpoint may declare for each kind of configuration number, checked as
// the field is read: a config.json claiming 10^6 layers is refused at once, naming the field,
// instead of allocating and listing tensors for every layer. Far above any released model
// (~128 layers, hidden <= 25600, ffn <= 53248, vocab ~256K).
inline constexpr std::int64_t kMaxLayers = 1024;
inline constexpr std::int64_t kMaxHeads = 4096;
inline constexpr std::int64_t kMaxDim = std::int64_t(1) << 17;  // hidden, ffn, head dims
inline constexpr std::int64_t kMaxVocab = std::int64_t(1) << 22;
inline constexpr std::int64_t kMaxPositions = std::int64_t(1) << 24;  // context, sliding window
inline constexpr std::int64_t kMaxExperts = 4096;                     // released MoE models: 8 to 512 experts

// The family of an architecture name or alias (GGUF general.architecture, HF model_type).
std::optional<Family> family_of(std::string_view arch);
// Whether the reference implements a mixture-of-experts FFN for the family (qwen3moe; llama with
// experts is Mixtral). Other families' expert tensors and counts are refused by name.
bool family_has_experts(Family f);
// Whether the family is the Gated DeltaNet hybrid (qwen35 dense, qwen3next with experts): the
// GDN tensor layouts, keys and head maps apply to both.
bool is_gdn_hybrid(Family f);
// Sets the family's hard-coded flags and, from full_attention_interval, the layer kinds.
void apply_family(ModelConfig& c);
// Keeps the first `layers` layers (0 keeps all).
void truncate_layers(ModelConfig& c, int layers);

}  // namespace ds::ref
