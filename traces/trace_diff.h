// Trace-vs-trace comparison for nightly runs: stages are matched by (step, layer, stage,
// mode) and every way the current trace is worse than the baseline is a finding.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace_reader.h"

namespace ds::trace {

struct DiffOptions {
  double factor = 2;  // an error metric that grew by more than this is a regression
};

struct DiffFinding {
  enum class Kind { error_grew, new_failure, new_nan, disappeared, bits_changed };
  Kind kind;
  StageKey key;
  Mode mode = Mode::isolated;
  std::string message;
  bool regression = true;  // bits_changed alone is informational
};
std::string_view finding_name(DiffFinding::Kind k);

// A run key on which the two traces differ: they are runs of different things, so their stages
// cannot be expected to agree (a different seed changes every bit).
struct KeyChange {
  std::string what;  // "seed", "model", "candidate", "prompt tokens", "decode steps"
  std::string base, current;
};
// The keys of two runs that differ, in a fixed order; empty when they are runs of one case.
std::vector<KeyChange> key_changes(const TraceReader& base, const TraceReader& current);

struct DiffReport {
  std::size_t matched = 0, only_base = 0, only_current = 0;
  std::vector<DiffFinding> findings;
  // Model steps only one trace ran (different --decode-steps): their stages are counted here,
  // not listed one finding each. A step only the baseline ran disappeared (a regression).
  std::vector<int> steps_only_base, steps_only_current;
  std::size_t stages_of_steps_only_base = 0, stages_of_steps_only_current = 0;
  // TraceReader::incomplete() of each side. A current run that did not finish is INCOMPLETE and
  // regressed whatever its flushed stages say; an unfinished baseline is only noted.
  std::optional<std::string> base_incomplete, current_incomplete;
  bool regressed() const;
};

// Two runs of one case where either stopped before any stage (refused by a gate, bad input:
// trace_stub.h), so there are no stages to match. A case that ran in the baseline and stops now
// regressed; one that runs now and stopped before, or stopped both times, did not, unless it now
// runs without finishing (INCOMPLETE).
struct StopChange {
  std::string_view kind;  // "case-stopped", "case-now-runs" or "case-still-stopped"
  bool regression = false;
  std::string message;  // one line: what each side did
  std::string reason;   // why the run that stopped stopped (the current one's when both did)
};
// nullopt when both runs ran (or did not finish): diff their stages.
std::optional<StopChange> compare_stops(const TraceCase& base, const TraceCase& current);

DiffReport diff_traces(const TraceReader& base, const TraceReader& current, const DiffOptions& opt = {});

}  // namespace ds::trace
