// What a run of a dump candidate (`--candidate dump:DIR`, candidates/dump/) does differently:
// only chained mode, no child process (nothing of it runs code another engine wrote), the
// prompt its directory carries, a preflight of every file before any compute, and the reference
// fill for the stages its mapping declares absent (the others stay `missing`).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "candidate.h"
#include "dump/dump_candidate.h"
#include "result.h"

namespace ds {

const dump::DumpCandidate* as_dump(const Candidate& cand);

// Chained only: a dump is what the engine computed from its own outputs, so there are no
// isolated inputs to hand it. Without an explicit --mode, chained; with isolated/both, exit 2.
void check_dump_modes(std::vector<Mode>& modes, bool modes_given, const std::string& spec);

// The dump, completed by the reference fill for the stages its mapping declares absent (every
// stage its plan leaves out when `fill_all`, as --fill reference asks). Throws PlanError when a
// filled stage needs one the dump lacks.
CandidatePtr fill_declared_absent(CandidatePtr dump, const ModelConfig& cfg, bool fill_all);

}  // namespace ds
