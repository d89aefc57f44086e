// The gates a candidate passes before anything is computed, from the model's header and the
// candidate's plans alone: coverage (every stage the model has is produced, or --fill computes
// it) and capability (the ops of the stages the candidate computes itself are declared).
#pragma once

#include <string>

#include "candidate.h"
#include "plan_check.h"

namespace ds {

struct GateAnswer {
  bool pass = true;
  bool unavailable = false;   // refused because the candidate cannot run on this machine
  std::string refusal;        // the full report when refused (exit 3)
  std::string reason;         // one line for a table: the missing ops or stages
  OpSet need, have, missing;  // the ops asked of the candidate itself
  Coverage coverage;
};

// Answers, in this order: UNAVAILABLE (the candidate cannot run here: no GPU...), REFUSED by the
// coverage gate, REFUSED by the capability gate, PASS. Throws PlanError (a malformed plan) and
// CandidateCrash (a plugin that crashes when asked).
GateAnswer gate_candidate(const ModelConfig& cfg, const Candidate& cand, bool fill);

}  // namespace ds
