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

std::optional<std::string> unapplied_rule(const Policy& policy, std::span<const StageSite> sites,
                                          std::string_view what) {
  // A rule for a stage this model lacks (q_norm on qwen2) or for layers it does not have applies to
  // other models of a matrix sharing the policy; only a stage no family has is a mistake.
  std::vector<std::string> names;  // distinct: this model's stages first, then the rest of the catalog
  const auto add = [&](std::string_view n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.emplace_back(n);
  };
  for (const StageSite& s : sites) add(s.stage);
  for (BlockKind k : {BlockKind::embed, BlockKind::decoder, BlockKind::gpt2, BlockKind::gdn,
                      BlockKind::gated_attn, BlockKind::head})
    for (const StageInfo& st : block_stages(k)) add(st.name);
  for (const Rule& r : policy.rules()) {
    const bool anywhere = std::any_of(names.begin(), names.end(),
                                      [&](const std::string& n) { return std::regex_match(n, r.stage); });
    if (!anywhere)
      return fmt::format("policy {}: rule stage '{}' matches no stage of {} nor of any other model family{}",
                         r.where, r.stage_src, what, did_you_mean(r.stage_src, names));
  }
  return std::nullopt;
}

}  // namespace ds
