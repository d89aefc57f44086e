// What a trace's root and run attributes say about a run: the tool and host, the model, the
// candidate (and the plugin file behind it), the baseline, the SIMT controls. `run` writes them
// when the trace opens, and into the stub a run stopped early leaves.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>

#include "candidate.h"
#include "model.h"
#include "plugin/plugin_library.h"
#include "policy.h"
#include "run_options.h"

namespace ds {

nlohmann::json trace_root_json(const RunOptions& opt);
// `checked_twin`: the plugin's checked twin that serves this run (settle_candidate finds it), or empty.
nlohmann::json candidate_json(const RunOptions& opt, const Candidate& cand,
                              const std::optional<PluginInfo>& origin, const std::string& checked_twin);
// What is known so far: a run stopped by bad input may know neither the model's configuration
// (`cfg` null) nor the candidate (`candidate` null: only the name asked for is written), and
// `baseline` is null until the baseline is made.
nlohmann::json run_json(const RunOptions& opt, const Policy& policy, const ModelConfig* cfg,
                        const nlohmann::json& candidate, const nlohmann::json& baseline);

}  // namespace ds
