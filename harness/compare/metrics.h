// The compare engine: every metric of one stage from one pass over both tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "result.h"
#include "tensor.h"

namespace ds {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
  bool operator==(const Tolerance&) const = default;
};

// Ordered-integer distance between two values in the storage dtype `t` (0 when equal,
// 1 between neighbours; +-0 are equal; +inf is one step above the largest finite value).
// Values are rounded to `t` first. A NaN on either side is an infinite distance.
double ulp_distance(DType t, double a, double b);
int ulp_bucket(double ulp);  // index into Metrics::ulp_hist

// ref and cand must have the same element count; `cand_dtype` is the candidate's storage
// dtype (ULPs are counted there). Contiguous f64/f32 data is read in place, anything else is
// widened to f64 first. Large tensors are split into fixed chunks that run on up to `threads`
// threads (0: all cores); the chunk results merge in chunk order, so every metric is the same
// bit for bit whatever the thread count.
// Which loop computes metrics of candidates stored in f32: `fastest` runs whole blocks of finite
// values through the widest SIMD build of the lane kernel this CPU runs (compare/scan_lanes.h).
// The others exist for tests and benchmarks: `scalar` is the element-by-element loop, the
// reference every lane build must agree with on every count, maximum and index (sums may
// differ in rounding, as summation order does); lanes_* pick one build.
enum class ScanPath { fastest, scalar, lanes_baseline, lanes_avx2, lanes_avx512 };
bool scan_path_supported(ScanPath path);
Metrics compute_metrics(const TensorView& ref, const TensorView& cand, DType cand_dtype, Tolerance tol,
                        int threads = 0, ScanPath path = ScanPath::fastest);

// sqrt(mean(x^2)): a stage's scale, which tolerances are relative to.
double rms(const TensorView& x);

// Relative error (||d|| / ||ref||) of each row of a 2-D stage.
std::vector<double> per_row_relative_error(const TensorView& ref, const TensorView& cand);

// FNV-1a (64-bit) of a tensor's stored bytes: equal hashes mean bit-identical stage outputs
// (the bit-exact policy and trace diffs compare them without the tensors).
std::uint64_t content_hash(const Tensor& t);

}  // namespace ds
