// What a family fixes regardless of the file: flags the HF modeling code hard-codes (Qwen2's
// q/k/v bias, Qwen3's QK-norm, GPT-2's biases and score division) and the layer kinds.
#pragma once

#include <optional>
#include <string_view>

#include "model_config.h"

namespace ds::ref {

// The family of an architecture name or alias (GGUF general.architecture, HF model_type).
std::optional<Family> family_of(std::string_view arch);
// Sets the family's hard-coded flags and, from full_attention_interval, the layer kinds.
void apply_family(ModelConfig& c);
// Keeps the first `layers` layers (0 keeps all).
void truncate_layers(ModelConfig& c, int layers);

}  // namespace ds::ref
