// Trace-vs-trace comparison for nightly runs: stages are matched by (step, layer, stage,
// mode) and every way the current trace is worse than the baseline is a finding.
#pragma once

#include <string>
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

struct DiffReport {
  std::size_t matched = 0, only_base = 0, only_current = 0;
  std::vector<DiffFinding> findings;
  bool regressed() const;
};

DiffReport diff_traces(const TraceReader& base, const TraceReader& current, const DiffOptions& opt = {});

}  // namespace ds::trace
