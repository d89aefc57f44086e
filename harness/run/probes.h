// Probes (`run --probe NAME|all`): input patterns that expose one class of kernel bug each, which
// the seeded prompt of a synthetic model never shows. A probe settles the prompt, the steps and the
// modes before the gates, and may rewrite the loaded weights that both sides then run on; the
// trace records it (run JSON "probe"). docs/cli.md lists them with their bug classes.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model_config.h"
#include "run_options.h"
#include "weights.h"

namespace ds {

struct Probe {
  std::string_view name;
  std::string_view targets;  // the bug class it exposes
  std::string_view what;     // what it feeds
};

std::span<const Probe> probes();
// The probe named `name`; throws InputError listing the probes otherwise.
const Probe& find_probe(std::string_view name);

// Why `probe` has nothing to aim at in a model of `cfg` (its layers as run): tiny-gdn-qk without a
// Gated DeltaNet layer, large-logits without an attention layer. Such a run is SKIPPED, not a
// pass; nothing when the probe applies.
std::optional<std::string> probe_skip_reason(const Probe& probe, const ModelConfig& cfg);
// The prompt, steps and modes of `probe` for a model of `cfg`, into `o`; throws InputError when
// the run cannot take the probe (a prompt given with --tokens).
void apply_probe_options(const Probe& probe, const ModelConfig& cfg, RunOptions& o);
// Rewrites the weights of a loaded model for `probe` (most probes leave them; the row probes untie
// a tied lm_head); returns one line saying what it changed, or "" when nothing.
std::string apply_probe_weights(const Probe& probe, ModelConfig& cfg, WeightStore& w,
                                const std::vector<int>& tokens);

}  // namespace ds
