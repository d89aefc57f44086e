// Replay one stage: re-run the candidate step that produced it from the inputs stored in a
// trace, and judge its output against the stored reference, without running the model.
#pragma once

#include <string>

#include "policy.h"
#include "result.h"
#include "simt_options.h"

namespace ds {

struct ReplayRequest {
  std::string trace;
  int step = 0, layer = 0;
  std::string stage;
  Mode mode = Mode::isolated;
  std::string candidate;  // empty: the trace's candidate
  std::string model;      // empty: the trace's model (its spec, or its absolute path from elsewhere)
  int case_index = -1;    // which case of a merged file (list_cases order); -1: a single trace
  SimtOptions simt;       // the SIMT runtime settings of the replayed step (--simt-order etc.)
};

struct ReplayResult {
  StageResult stored;    // the row in the trace
  StageResult replayed;  // the same stage, recomputed now
  std::string kernel_step;
  bool reproduces = false;  // same status, max |diff| and mismatch count
};

// Throws InputError when the trace, the case (a merged file needs one), the stage or its stored
// inputs are missing.
ReplayResult replay_stage(const ReplayRequest& req, const Policy& policy);

}  // namespace ds
