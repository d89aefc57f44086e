// Re-judging a stored trace under another policy, without running any model.
#pragma once

#include "policy.h"
#include "trace_reader.h"

namespace ds {

// The row's result judged by `policy`. When the policy's elementwise tolerance differs from
// the one the row was measured under, the mismatch count is recomputed from the stored
// tensors; a trace without tensors (capture stats/failing) is judged from the stored
// min_atol/max_abs instead, conservatively (a stage that cannot be shown to fit fails).
StageResult rejudge(const trace::TraceReader& trace, const trace::TraceRow& row, const Policy& policy);

}  // namespace ds
