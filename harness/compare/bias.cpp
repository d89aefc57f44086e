#include "bias.h"

#include <algorithm>
#include <cmath>

namespace ds {

namespace {
// Two f32 unit roundoffs: a row scale computed in f32 (a sum, a square root, a division).
constexpr double kRowScaleRounding = 0x1p-23;
}  // namespace

// The slope is a weighted least-squares fit of d = cand - ref on ref with weights
// w = 1 / max(|ref|, rms(ref))^2: the rounding error of a stored value scales with the value
// itself (one relative ULP) above the stage's scale, and with the stage's scale below it (errors
// fed in by the inputs). Unweighted, the few massive activations of a residual stream would carry
// the whole fit and their coarse ULPs would hide a bias on everything else. With a_i = w_i ref_i
// and D = sum a_i ref_i:  slope = sum a_i d_i / D.
// With no bias each d_i is an error of mean zero, and the slope's variance is
// sum_ij a_i a_j cov(d_i, d_j) / D^2. It is estimated three ways and the largest kept, so that no
// one model of a correct candidate's error decides alone:
//  - elementwise, from the floor's errors e_i = floor_i - ref_i (a correct implementation's):
//    sum a_i^2 e_i^2 / D^2;
//  - by row, from the floor's errors: sum_rows (sum_{i in row} a_i e_i)^2 / D^2, which holds when
//    the errors of a row share a cause (a norm's inverse RMS computed from rounded inputs scales a
//    whole row; a rounded input feeds every output of its row);
//  - elementwise, from the fit's own residuals d_i - slope ref_i: a correct candidate noisier
//    than the floor (an f32 kernel whose long sums round more than once per value).
// The by-row estimate is one sample per row: a decode step's single row gives a single draw of
// the floor's row error, which may be near zero by chance (or always, where the floor computes a
// norm's scale more precisely than a kernel does), while a correct f32 RMSNorm in numpy or Triton
// rounds its one 1/rms per row by a unit or two. Every row therefore also carries a shared
// relative error of kRowScaleRounding, whatever the floor drew: a bias must stand out from a
// per-row scale rounded in f32, which leaves every f16-sized bias (2^-12, a LayerNorm over N - 1,
// a rounding toward zero in f16) tens of standard errors out.
// None of these sees an error that the stage's stored inputs feed into all of its outputs alike
// (an fc of 4H outputs from H rounded inputs has H, not 4H, independent errors). The floor run
// read nearly the same stored inputs, so the same slope taken against the floor's output,
// sum a_i (cand_i - floor_i) / D, has that shared part cancelled; its standard error is estimated
// the same ways from its own residuals and the floor's errors. A bias is one both tests see: the
// slope must stand out against the oracle and against the floor, in the same direction, and the
// standard error returned is the one that makes slope / se the smaller of the two z values.
BiasFit fit_bias(const TensorView& ref, const TensorView& cand, const TensorView* floor) {
  BiasFit fit;
  const std::int64_t n = ref.numel();
  if (n != cand.numel() || (floor && floor->numel() != n)) return fit;
  auto floor_at = [&](std::int64_t i, double r) { return floor ? floor->at(i) : r; };
  auto usable = [](double r, double c, double f) {
    return std::isfinite(r) && std::isfinite(c) && std::isfinite(f);
  };
  double ss = 0;
  std::int64_t finite = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double r = ref.at(i), c = cand.at(i), f = floor_at(i, r);
    if (!usable(r, c, f)) continue;
    ss += r * r;
    ++finite;
  }
  if (finite < kBiasMinElements || !(ss > 0)) return fit;
  const double scale = std::sqrt(ss / double(finite));
  auto weight = [&](double r) {
    const double m = std::max(std::fabs(r), scale);
    return r / (m * m);
  };
  const std::int64_t rows = ref.rank() >= 2 ? std::max<std::int64_t>(ref.dim(0), 1) : 1;
  const std::int64_t per_row = n / rows;
  double num = 0, num_f = 0, den = 0, v_floor = 0, v_rows = 0, v_row_scale = 0;
  for (std::int64_t row = 0; row < rows; ++row) {
    double row_sum = 0, row_den = 0;
    for (std::int64_t i = row * per_row; i < (row + 1) * per_row; ++i) {
      const double r = ref.at(i), c = cand.at(i), f = floor_at(i, r);
      if (!usable(r, c, f)) continue;
      const double a = weight(r);
      num += a * (c - r);
      num_f += a * (c - f);
      den += a * r;
      row_den += a * r;
      v_floor += a * a * (f - r) * (f - r);
      row_sum += a * (f - r);
    }
    v_rows += row_sum * row_sum;
    v_row_scale += (kRowScaleRounding * row_den) * (kRowScaleRounding * row_den);
  }
  fit.slope = num / den;
  if (!floor) return fit;
  const double slope_f = num_f / den;
  double v_resid = 0, v_resid_f = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double r = ref.at(i), c = cand.at(i), f = floor_at(i, r);
    if (!usable(r, c, f)) continue;
    const double a = weight(r), e = c - r - fit.slope * r, e_f = c - f - slope_f * r;
    v_resid += a * a * e * e;
    v_resid_f += a * a * e_f * e_f;
  }
  const double se_ref = std::sqrt(std::max({v_floor, v_rows + v_row_scale, v_resid})) / den;
  const double se_floor = std::sqrt(std::max(v_floor, v_resid_f)) / den;
  const double z_ref = fit.slope / se_ref, z_floor = slope_f / se_floor;
  if (fit.slope == 0 || !(z_ref * z_floor > 0))
    fit.se = INFINITY;  // no bias, or the two disagree on its sign: none
  else
    fit.se = std::fabs(fit.slope) / std::min(std::fabs(z_ref), std::fabs(z_floor));
  return fit;
}

}  // namespace ds
