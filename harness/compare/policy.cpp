#include "policy.h"

#include <algorithm>

namespace ds {

namespace {
struct DtypeTolerance {
  double atol, rtol;
};
// torch.testing.assert_close defaults.
DtypeTolerance dtype_tolerance(DType t) {
  switch (t) {
    case DType::f16: return {1e-5, 1e-3};
    case DType::bf16: return {1e-5, 1.6e-2};
    case DType::f32: return {1e-5, 1.3e-6};
    case DType::f64: return {1e-7, 1e-7};
    case DType::i32: return {0, 0};
  }
  return {1e-5, 1e-3};
}
}  // namespace

Policy Policy::dtype_defaults() { return Policy{}; }

Tolerance Policy::tolerance(const StageKey&, Mode, DType cand_dtype, double ref_rms) const {
  const auto d = dtype_tolerance(cand_dtype);
  return {std::max(d.atol, d.rtol * ref_rms), d.rtol};
}

Status Policy::judge(const StageKey&, Mode, const Metrics& m) const {
  if (m.nan_cand > m.nan_ref || (m.nan_cand > 0 && m.first_nan >= 0 && m.mismatches > 0)) return Status::nan;
  return m.mismatches == 0 && m.inf_agree ? Status::pass : Status::fail;
}

}  // namespace ds
