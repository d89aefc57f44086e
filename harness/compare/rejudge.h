// Re-judging a stored trace under another policy, without running any model.
#pragma once

#include "policy.h"
#include "runner.h"
#include "trace_reader.h"

namespace ds {

// The row's result judged by `policy`. When the policy's elementwise tolerance differs from
// the one the row was measured under, the mismatch count is recomputed from the stored
// tensors; a trace without tensors (capture stats/failing) is judged from the stored
// min_atol/max_abs instead, conservatively (a stage that cannot be shown to fit fails).
StageResult rejudge(const trace::TraceReader& trace, const trace::TraceRow& row, const Policy& policy);

// Every row of one case re-judged and concluded. A case whose run stored no result is INCOMPLETE
// (report.incomplete set): exit 1 at least, its verdict naming the last stage flushed, whatever
// the flushed stages say. `report` and the matrix reports of merged files both come through here.
RunReport rejudge_trace(const trace::TraceReader& trace, const Policy& policy);

}  // namespace ds
