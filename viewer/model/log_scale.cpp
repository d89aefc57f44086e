#include "log_scale.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ds::view {

double LogScale::to_unit(double v) const {
  if (!(v > 0)) return 0;
  const double u = (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return std::clamp(u, 0.0, 1.0);
}

double LogScale::from_unit(double u) const {
  return std::pow(10.0, std::log10(lo) + u * (std::log10(hi) - std::log10(lo)));
}

LogScale fit_log_scale(std::span<const double> values, int min_decades) {
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) return {std::pow(10.0, -min_decades), 1.0};
  int dlo = int(std::floor(std::log10(lo)));
  int dhi = int(std::ceil(std::log10(hi)));
  if (dhi == dlo) ++dhi;
  // Widen symmetrically-ish so flat curves still get a readable axis.
  while (dhi - dlo < min_decades) (dhi - dlo) % 2 ? ++dhi : --dlo;
  return {std::pow(10.0, dlo), std::pow(10.0, dhi)};
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e-3 && a < 1e5) return fmt::format("{:g}", v);
  const int e = int(std::floor(std::log10(a) + 1e-9));
  const double mant = v / std::pow(10.0, e);
  if (std::fabs(mant - 1) < 1e-9) return fmt::format("1e{}", e);
  return fmt::format("{:g}e{}", mant, e);
}

std::vector<Tick> log_ticks(const LogScale& s) {
  std::vector<Tick> out;
  const int dlo = int(std::floor(std::log10(s.lo) + 1e-9));
  const int dhi = int(std::ceil(std::log10(s.hi) - 1e-9));
  const int decades = std::max(1, dhi - dlo);
  const int step = (decades + 7) / 8;  // at most ~8 labelled decades
  for (int d = dlo; d <= dhi; ++d) {
    const double v = std::pow(10.0, d);
    if (v >= s.lo * (1 - 1e-9) && v <= s.hi * (1 + 1e-9)) {
      const bool labelled = (d - dlo) % step == 0;
      out.push_back({v, s.to_unit(v), true, labelled ? tick_label(v) : std::string()});
    }
    if (decades > 4 || d == dhi) continue;
    for (int m = 2; m <= 9; ++m) {
      const double mv = m * v;
      if (mv > s.lo && mv < s.hi) out.push_back({mv, s.to_unit(mv), false, {}});
    }
  }
  return out;
}

std::vector<Tick> linear_ticks(double lo, double hi, int target) {
  std::vector<Tick> out;
  if (!(hi > lo) || target < 1) return out;
  const double raw = (hi - lo) / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    const double snapped = std::fabs(v) < step * 1e-9 ? 0.0 : v;
    out.push_back({snapped, (snapped - lo) / (hi - lo), true, tick_label(snapped)});
  }
  return out;
}

}  // namespace ds::view
