// Options and policy rules that select part of a model (--capture-stages, --capture-layers, a
// rule's stage: and layers:): one that selects nothing would be a silent no-op, so it is bad input
// (exit 2) naming what it selected and the closest stage name.
#pragma once

#include "model_config.h"
#include "policy.h"
#include "run_options.h"

namespace ds {

// `header`: the configuration of the layers this run runs (--layers applied). Throws InputError.
void check_selectors(const RunOptions& opt, const ModelConfig& header, const Policy& policy);

}  // namespace ds
