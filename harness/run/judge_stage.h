// Judging one stage against what it is held to (step loop): the metrics, the noise floor, the
// policy's verdict, a race found on its step, the evidence a failing row shows; then the row
// into the report and the trace.
#pragma once

#include "run_features.h"
#include "runner.h"

namespace ds {

// Judges the candidate's tensor against `target` (the reference's, or the baseline's) in the
// shape of `c.ref`, with `c.floor` as the noise floor when it has one.
void judge_stage(RunState& s, const LaunchFindings& findings, const StageCall& c, const Tensor& target);
// A stage the reference fill computed: recorded so every report shows it, never judged.
void record_filled(RunState& s, const StageCall& c);
// Folds one step's logits of a lane into the report's LaneLogits of its mode.
void note_logits(RunReport& report, Mode mode, int step, const Tensor& ref, const Tensor& cand);

}  // namespace ds
