// Whether every rule of a policy can apply: a rule whose `stage:` matches no stage of any model
// family (a typo such as `atn_norm`) would otherwise be silently never applied, and the run would
// pass under a policy it never used. A rule for stages or layers this model lacks is kept: one
// policy serves every model of a matrix.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model_config.h"
#include "policy.h"

namespace ds {

// One place a stage is judged: its layer (kModelLayer for embed, final_norm, logits) and name.
struct StageSite {
  int layer = 0;
  std::string stage;
};

// Every stage a run of `cfg` judges, model-level ones first.
std::vector<StageSite> model_stage_sites(const ModelConfig& cfg);

// The first rule of `policy` whose stage matches none of `sites` nor any catalog stage, as an error
// naming the rule (file:line), its selector, and the closest stage name (this model's first);
// nullopt when every rule can apply.
// `what` names the model or trace the sites come from. Rules selecting by mode alone are not
// checked: an isolated-only run leaves a chained rule idle by design.
std::optional<std::string> unapplied_rule(const Policy& policy, std::span<const StageSite> sites,
                                          std::string_view what);

}  // namespace ds
