// Synthetic models: seeded, deterministic weights for named presets, e.g. "synthetic:qwen2-tiny",
// drawn so that the activations have the statistics published for real checkpoints of the
// families (docs/synthetic-models.md): embedding scale, a residual stream that grows over depth,
// massive activations on the sink token, attention-logit and next-token spreads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model.h"

namespace ds::ref {

// The token a synthetic model treats as its start of sequence: its residual stream carries the
// massive activations, and the prompts drawn for a synthetic model begin with it.
constexpr int kSinkToken = 0;

// The statistics a preset's weights are drawn to give (targets; tests measure the outcome).
struct SyntheticScales {
  double embed_std = 0;               // token embedding (and GPT-2's position embedding) std
  double qk_gain = 0;                 // RMS of q and k: attention logits of std about qk_gain^2
  std::vector<double> residual;       // per layer: RMS of the residual stream after the layer
  std::vector<double> write;          // per layer: RMS each of attention and the MLP adds to it
  std::vector<int> massive_channels;  // where the sink token carries its massive activations
  double massive = 0;                 // their magnitude
  double logit_std = 0;               // std of a row of logits
  double final_norm = 0;              // mean applied weight of the final norm (sets logit_std)
};
// For a preset's full configuration (a model cut to its first layers keeps these).
SyntheticScales synthetic_scales(const ModelConfig& c);

// Preset names without the "synthetic:" prefix.
std::vector<std::string> synthetic_presets();
// The configuration of a preset (no weights). Throws std::invalid_argument for unknown names.
ModelConfig synthetic_config(std::string_view preset);
// The preset of `preset`'s family whose widths are off every vector and tile multiple
// (`<family>-tails-tiny`: hidden 90, ffn 170, heads of 18, vocab 300), for `run --widths odd`.
// Throws std::invalid_argument for an unknown preset or a family that has none.
std::string synthetic_tails_preset(std::string_view preset);
// The preset of `preset`'s family (and MoE or not) at real widths, one layer (`<family>-wide`:
// hidden 2304, ffn 8192, heads of 128; 128 experts for Qwen3-MoE), for check's real-widths part. Throws
// std::invalid_argument for an unknown preset or a family that has none.
std::string synthetic_wide_preset(std::string_view preset);
// The dtype a preset's weights are generated in (what the run's memory estimate counts).
DType synthetic_dtype(std::string_view preset);
// Config + weights. `layers` > 0 truncates the model to its first layers (real-shape presets
// are large); the same seed gives the same weights for the layers kept.
Model make_synthetic(std::string_view preset, std::uint64_t seed = 0, int layers = 0);

// Deterministic N(0, 1) stream keyed by (seed, name): independent of generation order.
class NormalStream {
 public:
  NormalStream(std::uint64_t seed, std::string_view name);
  double next();

 private:
  std::uint64_t state_;
  bool have_spare_ = false;
  double spare_ = 0;
};

}  // namespace ds::ref
