// Axis scales for the viewer's plots: a log scale over whole decades and "nice" linear ticks.
// Plain arithmetic so the plots' geometry is tested without a window.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace ds::view {

struct Tick {
  double value = 0;
  double unit = 0;  // position along the axis in [0, 1]
  bool major = false;
  std::string label;  // empty for minor ticks
};

// Maps [lo, hi] (both > 0) logarithmically onto [0, 1].
struct LogScale {
  double lo = 1e-8, hi = 1;
  double to_unit(double v) const;  // clamped into [0, 1]; v <= 0 or NaN maps to 0
  double from_unit(double u) const;
};

// The smallest whole-decade range holding every positive finite value, at least
// `min_decades` wide; errors of exactly 0 are left out (they have no place on a log axis).
LogScale fit_log_scale(std::span<const double> values, int min_decades = 2);
// A major tick per decade (thinned to at most ~8 labels); minor ticks at 2..9 when few decades.
std::vector<Tick> log_ticks(const LogScale& s);
// Ticks at 1, 2 or 5 times a power of ten, about `target` of them.
std::vector<Tick> linear_ticks(double lo, double hi, int target = 6);
// "1e-3", "0.5", "12": short labels for ticks.
std::string tick_label(double v);

}  // namespace ds::view
