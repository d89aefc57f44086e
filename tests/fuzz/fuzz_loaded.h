// What the loader targets do with a loaded model or a refusal: what a run does next with it.
#pragma once

#include <string>

#include "model_error.h"

namespace ds::fuzz {

// The error goes into a trace's result as text, as a run that refuses a model records it: a
// message quoting bytes of the file must never make that throw.
void record_error(const ds::ref::ModelError& e);
// load_config (what the gates read) and load_model (what a run computes with) of `spec`; each
// ends in a model or a ModelError.
void load_both(const std::string& spec);

}  // namespace ds::fuzz
