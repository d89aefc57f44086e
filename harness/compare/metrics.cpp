#include "metrics.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace ds {

namespace {

// Maps a value of dtype t to an integer whose order matches the float order, so that
// neighbouring representable values differ by exactly 1.
std::int64_t ordered(DType t, double v) {
  std::int64_t bits;
  int width;
  switch (t) {
    case DType::f16: bits = f64_to_f16(v); width = 16; break;
    case DType::bf16: bits = f64_to_bf16(v); width = 16; break;
    case DType::f32: bits = std::bit_cast<std::uint32_t>(float(v)); width = 32; break;
    case DType::f64: {
      auto b = std::bit_cast<std::int64_t>(v);
      return b < 0 ? std::numeric_limits<std::int64_t>::min() - b : b;
    }
    default: return std::int64_t(std::llround(v));
  }
  const std::int64_t sign = std::int64_t(1) << (width - 1);
  return (bits & sign) ? -(bits & (sign - 1)) : bits;
}

}  // namespace

double ulp_distance(DType t, double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::infinity();
  const std::int64_t x = ordered(t, a), y = ordered(t, b);
  // f64 differences can overflow int64; go through double (rounding is fine this far out).
  return std::fabs(double(x) - double(y));
}

int ulp_bucket(double ulp) {
  if (!std::isfinite(ulp)) return 7;
  if (ulp == 0) return 0;
  if (ulp <= 1) return 1;
  if (ulp <= 3) return 2;
  if (ulp <= 15) return 3;
  if (ulp <= 255) return 4;
  if (ulp <= 65535) return 5;
  return 6;
}

Metrics compute_metrics(const TensorView& ref, const TensorView& cand, DType cand_dtype, Tolerance tol) {
  if (ref.numel() != cand.numel())
    throw std::invalid_argument("compute_metrics: element counts differ");
  Metrics m;
  m.numel = ref.numel();
  m.atol = tol.atol;
  m.rtol = tol.rtol;
  const double tiny = std::numeric_limits<double>::min();
  double sum_abs = 0, sum_d2 = 0, sum_r2 = 0, sum_c2 = 0, sum_rc = 0, sum_ulp = 0;
  std::int64_t finite_pairs = 0;
  m.max_abs = 0;
  for (std::int64_t i = 0; i < m.numel; ++i) {
    const double r = ref.at(i), c = cand.at(i);
    const bool rn = std::isnan(r), cn = std::isnan(c);
    m.nan_ref += rn;
    m.nan_cand += cn;
    if ((rn || cn) && m.first_nan < 0) m.first_nan = i;
    const bool ri = std::isinf(r), ci = std::isinf(c);
    m.inf_ref += ri;
    m.inf_cand += ci;
    if (ri || ci) {
      // Matching infinities are equal, not NaN-producing: they count as exact and stay out of
      // the sums; a mismatched infinity is an infinite error.
      if (ri && ci && r == c) {
        ++m.ulp_hist[0];
        continue;
      }
      m.inf_agree = false;
    }
    const double d = std::fabs(c - r);
    const bool bad = rn || cn || !(d <= tol.atol + tol.rtol * std::fabs(r));
    if (bad) {
      ++m.mismatches;
      if (m.first_mismatch < 0) {
        m.first_mismatch = i;
        m.first_ref = r;
        m.first_cand = c;
      }
    }
    if (rn || cn) {
      ++m.ulp_hist[7];
      continue;
    }
    const double ulp = ulp_distance(cand_dtype, r, c);
    ++m.ulp_hist[std::size_t(ulp_bucket(ulp))];
    if (m.max_abs_index < 0 || d > m.max_abs) {
      m.max_abs = d;
      m.max_abs_index = i;
      m.max_abs_ref = r;
      m.max_abs_cand = c;
    }
    m.max_rel = std::fmax(m.max_rel, d / std::fmax(std::fabs(r), tiny));
    if (std::isfinite(ulp)) {
      m.max_ulp = std::fmax(m.max_ulp, ulp);
      sum_ulp += ulp;
    } else {
      m.max_ulp = ulp;
    }
    // Minimum tolerances: the atol that passes with this rtol, and vice versa.
    m.min_atol = std::fmax(m.min_atol, d - tol.rtol * std::fabs(r));
    if (std::fabs(r) > 0) m.min_rtol = std::fmax(m.min_rtol, (d - tol.atol) / std::fabs(r));
    else if (d > tol.atol) m.min_rtol = std::numeric_limits<double>::infinity();
    sum_abs += d;
    sum_d2 += d * d;
    sum_r2 += r * r;
    sum_c2 += c * c;
    sum_rc += r * c;
    ++finite_pairs;
  }
  const std::int64_t nan_pairs = m.ulp_hist[7];
  if (nan_pairs > 0) {
    m.max_abs = std::numeric_limits<double>::quiet_NaN();
    m.max_ulp = std::numeric_limits<double>::infinity();
  }
  const double n = double(finite_pairs ? finite_pairs : 1);
  m.mean_abs = sum_abs / n;
  m.rms = std::sqrt(sum_d2 / n);
  m.ref_rms = std::sqrt(sum_r2 / n);
  m.mean_ulp = sum_ulp / n;
  m.min_atol = std::fmax(m.min_atol, 0.0);
  m.min_rtol = std::fmax(m.min_rtol, 0.0);
  if (sum_r2 == 0 && sum_c2 == 0) m.cosine = 1;
  else if (sum_r2 == 0 || sum_c2 == 0) m.cosine = 0;
  else m.cosine = sum_rc / std::sqrt(sum_r2 * sum_c2);
  m.nmse = sum_r2 > 0 ? sum_d2 / sum_r2 : (sum_d2 > 0 ? std::numeric_limits<double>::infinity() : 0);
  m.sqnr_db = sum_d2 > 0 ? 10 * std::log10(sum_r2 / sum_d2) : std::numeric_limits<double>::infinity();
  if (!m.inf_agree) {
    m.max_abs = std::numeric_limits<double>::infinity();
    m.cosine = std::numeric_limits<double>::quiet_NaN();
  }
  return m;
}

std::vector<double> per_row_relative_error(const TensorView& ref, const TensorView& cand) {
  std::vector<double> out;
  if (ref.rank() != 2 || ref.numel() != cand.numel()) return out;
  const std::int64_t rows = ref.dim(0), cols = ref.dim(1);
  for (std::int64_t r = 0; r < rows; ++r) {
    double d2 = 0, r2 = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double a = ref.at(r * cols + c), b = cand.at(r * cols + c);
      d2 += (b - a) * (b - a);
      r2 += a * a;
    }
    out.push_back(r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2));
  }
  return out;
}

}  // namespace ds
