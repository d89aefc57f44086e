// Tolerance policies: how metrics become a status. Kept apart from the data so a stored
// trace can be re-judged under another policy.
#pragma once

#include <string>

#include "metrics.h"
#include "result.h"

namespace ds {

class Policy {
 public:
  // The dtype defaults (torch.testing.assert_close's rtol per dtype), with atol scaled to
  // the stage: reductions over operands stored in the candidate's dtype make the absolute
  // error scale with the operands, not with each output element, so an elementwise atol of
  // 1e-5 would flag honest f16 rounding in every projection whose output crosses zero.
  static Policy dtype_defaults();

  std::string name() const { return name_; }
  // The tolerance applied to a stage whose reference has RMS `ref_rms`.
  Tolerance tolerance(const StageKey& key, Mode mode, DType cand_dtype, double ref_rms) const;
  // pass / fail / nan from metrics taken under `tolerance`.
  Status judge(const StageKey& key, Mode mode, const Metrics& m) const;

 private:
  std::string name_ = "dtype-defaults";
};

}  // namespace ds
