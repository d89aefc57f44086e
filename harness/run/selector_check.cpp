#include "selector_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "closest_name.h"
#include "policy_scope.h"
#include "runner.h"
#include "stage_catalog.h"

namespace ds {

void check_selectors(const RunOptions& opt, const ModelConfig& header, const Policy& policy) {
  const std::vector<StageSite> sites = model_stage_sites(header);
  const std::string model = fmt::format("{} ({} layer(s) run)", opt.model, header.n_layers);
  if (auto why = unapplied_rule(policy, sites, model)) throw InputError(*why);
  if (!opt.capture_stages.empty()) {
    std::regex pattern;
    try {
      pattern = compile_stage_pattern(opt.capture_stages);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--capture-stages: {}", e.what()));
    }
    std::vector<std::string> names;
    for (const StageSite& s : sites)
      if (std::find(names.begin(), names.end(), s.stage) == names.end()) names.push_back(s.stage);
    const bool any = std::any_of(names.begin(), names.end(),
                                 [&](const std::string& n) { return std::regex_match(n, pattern); });
    if (!any)
      throw InputError(fmt::format("--capture-stages '{}' matches no stage of {}{}", opt.capture_stages,
                                   model, did_you_mean(opt.capture_stages, names)));
  }
  if (opt.capture_layer_min > header.n_layers - 1)
    throw InputError(fmt::format(
        "--capture-layers from {}: {} runs layers 0 to {} only, so no layer's tensors would be kept{}",
        opt.capture_layer_min, opt.model, header.n_layers - 1,
        opt.layers > 0 ? fmt::format(" (--layers {})", opt.layers) : std::string()));
}

}  // namespace ds
