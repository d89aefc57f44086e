// Synthetic models: seeded, deterministic weights of realistic scale (projections N(0, 0.02),
// norm weights near 1, biases N(0, 0.02)) for named presets, e.g. "synthetic:qwen2-tiny".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model.h"

namespace ds::ref {

// Preset names without the "synthetic:" prefix.
std::vector<std::string> synthetic_presets();
// The configuration of a preset (no weights). Throws std::invalid_argument for unknown names.
ModelConfig synthetic_config(std::string_view preset);
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
