#include "rejudge.h"

namespace ds {

namespace {

// Whether every element fits `t`, from metrics taken under another tolerance: sufficient
// conditions only (max |d| <= atol; or, with an rtol no smaller, the stored min_atol <= atol).
bool fits_without_tensors(const Metrics& m, Tolerance t) {
  if (!(m.max_abs <= t.atol)) return t.rtol >= m.rtol && m.min_atol <= t.atol;
  return true;
}

}  // namespace

StageResult rejudge(const trace::TraceReader& trace, const trace::TraceRow& row, const Policy& policy) {
  StageResult r = row.result;
  const bool measured = r.status == Status::pass || r.status == Status::fail || r.status == Status::nan;
  if (measured) {
    const Tolerance t = policy.tolerance(r);
    if (!(t == Tolerance{r.m.atol, r.m.rtol})) {
      if (trace.has_tensors(row)) {
        const double ref_rms = r.m.ref_rms;
        const Tensor ref = trace.ref_tensor(row), cand = trace.cand_tensor(row);
        r.m = compute_metrics(ref.view(), cand.view(), r.cand_dtype, t);
        r.m.ref_rms = ref_rms;
      } else if (fits_without_tensors(r.m, t)) {
        r.m.mismatches = 0;
        r.m.first_mismatch = -1;
      } else if (r.m.mismatches == 0) {
        r.m.mismatches = 1;  // at least one, somewhere: the stored metrics cannot say where
      }
      r.m.atol = t.atol;
      r.m.rtol = t.rtol;
    }
  }
  policy.judge(r);
  return r;
}

}  // namespace ds
