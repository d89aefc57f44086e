// The compare engine: every metric of one stage from one pass over both tensors.
#pragma once

#include "result.h"
#include "tensor.h"

namespace ds {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// Ordered-integer distance between two values in the storage dtype `t` (0 when equal,
// 1 between neighbours; +-0 are equal). Values are rounded to `t` first.
double ulp_distance(DType t, double a, double b);
int ulp_bucket(double ulp);  // index into Metrics::ulp_hist

// ref and cand must have the same element count; `cand_dtype` is the candidate's storage
// dtype (ULPs are counted there).
Metrics compute_metrics(const TensorView& ref, const TensorView& cand, DType cand_dtype, Tolerance tol);

// Relative error (||d|| / ||ref||) of each row of a 2-D stage.
std::vector<double> per_row_relative_error(const TensorView& ref, const TensorView& cand);

}  // namespace ds
