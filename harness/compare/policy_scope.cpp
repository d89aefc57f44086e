#include "policy_scope.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <regex>

#include "closest_name.h"
#include "stage_catalog.h"

namespace ds {

std::vector<StageSite> model_stage_sites(const ModelConfig& cfg) {
  std::vector<StageSite> sites;
  for (std::string_view s : stages_for(cfg, kModelLayer)) sites.push_back({kModelLayer, std::string(s)});
  for (int layer = 0; layer < cfg.n_layers; ++layer)
    for (std::string_view s : stages_for(cfg, layer)) sites.push_back({layer, std::string(s)});
  return sites;
}

namespace {

bool layer_selected(const Rule& r, int layer) {
  return r.any_layer || (layer != kModelLayer && layer >= r.layer_min && layer <= r.layer_max);
}

std::string layers_text(const Rule& r) {
  if (r.layer_min == r.layer_max) return fmt::format("{}", r.layer_min);
  return r.layer_max == std::numeric_limits<int>::max() ? fmt::format("{}:", r.layer_min)
                                                        : fmt::format("{}:{}", r.layer_min, r.layer_max);
}

}  // namespace

std::optional<std::string> unapplied_rule(const Policy& policy, std::span<const StageSite> sites,
                                          std::string_view what) {
  std::vector<std::string> names;  // distinct, in catalog order
  int last_layer = kModelLayer;
  for (const StageSite& s : sites) {
    if (std::find(names.begin(), names.end(), s.stage) == names.end()) names.push_back(s.stage);
    last_layer = std::max(last_layer, s.layer);
  }
  for (const Rule& r : policy.rules()) {
    bool stage_anywhere = false, applies = false;
    for (const StageSite& s : sites) {
      if (!std::regex_match(s.stage, r.stage)) continue;
      stage_anywhere = true;
      if (layer_selected(r, s.layer)) {
        applies = true;
        break;
      }
    }
    if (applies) continue;
    if (!stage_anywhere)
      return fmt::format("policy {}: rule stage '{}' matches no stage of {}{} (its stages: {})", r.where,
                         r.stage_src, what, did_you_mean(r.stage_src, names), fmt::join(names, ", "));
    const std::string layers = last_layer < 0
                                   ? std::string("no layers")
                                   : fmt::format("{} layer(s), 0 to {}", last_layer + 1, last_layer);
    return fmt::format("policy {}: rule layers {} with stage '{}' selects no stage of {}, which has {}",
                       r.where, layers_text(r), r.stage_src, what, layers);
  }
  return std::nullopt;
}

}  // namespace ds
