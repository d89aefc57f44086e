// The systematic-error statistic of a stage: how far the candidate's output is scaled against the
// reference's, and how far a correct implementation's would be by chance. A bias below one ULP
// per element but present on every element (a residual scaled by 1 + 2^-12, a LayerNorm over
// N - 1, an epilogue rounding toward zero) hides inside every per-element band, yet over a whole
// stage it stands many standard errors from zero (docs/policies.md, "Systematic error").
#pragma once

#include <cstdint>
#include <limits>

#include "tensor.h"

namespace ds {

struct BiasFit {
  static constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  // The fitted relative scale error of the candidate against the reference: the weighted least
  // squares slope of (cand - ref) on ref. About 2^-12 for a candidate that scales by 1 + 2^-12.
  double slope = nan;
  // Its standard error under "no bias", from the noise floor's own errors (the reference at the
  // candidate's storage dtype against the f64 oracle) and from the fit's residuals, made the
  // larger so that slope / se is the smaller z of the test against the oracle and the one against
  // the floor run (bias.cpp); +inf when the two disagree in sign. NaN without a floor or with fewer than
  // kBiasMinElements finite elements.
  double se = nan;
};

// Fewer elements than this make the slope's standard error a poor guide to its distribution.
inline constexpr std::int64_t kBiasMinElements = 32;

// ref, cand and floor have the same element count; rows of the leading dimension are the groups
// whose errors may share a cause. Without a floor (nullptr) only the slope is fitted.
BiasFit fit_bias(const TensorView& ref, const TensorView& cand, const TensorView* floor);

}  // namespace ds
