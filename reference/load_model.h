// One entry point for every model source: a GGUF file, an HF directory (config.json +
// *.safetensors), or a synthetic preset. Every failure is a ModelError naming the file and
// the field or tensor at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "model.h"
#include "model_error.h"

namespace ds::ref {

// LLaMA GGUF files carry Q/K rows permuted for interleaved RoPE ([DIFF] reference-math.md §2).
enum class LlamaQkLayout {
  unpermute,  // undo the permutation on load; keep HF layout + NEOX RoPE (the default)
  keep_gguf,  // keep the file's rows; use NORMAL (interleaved) RoPE. Same scores, permuted q/k.
};

struct LoadOptions {
  LlamaQkLayout llama_qk = LlamaQkLayout::unpermute;
  // GDN value-head to key-head map; by default HF files and qwen3next GGUF are grouped,
  // qwen35 GGUF (V heads re-tiled by the converter) tiled.
  std::optional<GdnHeadMap> gdn_head_map;
};

// The preset of a "synthetic:<preset>" spec; nullopt for a file or directory.
std::optional<std::string_view> synthetic_preset(std::string_view spec);

// `spec`: "synthetic:<preset>", a path to a .gguf file, or a directory with config.json and
// *.safetensors. `seed` only affects synthetic weights; `layers` > 0 keeps the first layers
// (tensors of later layers are not even decoded).
Model load_model(std::string_view spec, std::uint64_t seed = 0, int layers = 0,
                 const LoadOptions& options = {});
// Only the configuration of `spec` (GGUF header, config.json, or the preset): what the gates
// need, without reading or generating any weight.
ModelConfig load_config(std::string_view spec, int layers = 0, const LoadOptions& options = {});

}  // namespace ds::ref
