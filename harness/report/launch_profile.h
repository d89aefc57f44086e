// `--profile`: the candidate's kernel launches per candidate step (the stages it produced) and per
// layer, from a run's launch records or a trace's /launches table.
#pragma once

#include <cstdio>
#include <vector>

#include "launch_log.h"

namespace ds {

void print_launch_profile(std::FILE* out, const std::vector<StepLaunch>& launches);

}  // namespace ds
