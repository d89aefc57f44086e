#include "drift_marks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ds::view {

namespace {
constexpr Rgba kTrendLow{60, 60, 70}, kTrendHigh{255, 190, 60};
}  // namespace

DriftMarks drift_marks(const TraceModel& model, int step) {
  DriftMarks out;
  const Grid* g = model.grid(step, Mode::chained);
  if (!g) return out;
  const auto& layers = model.layers();
  for (std::size_t c = 0; c < layers.size(); ++c) {
    if (layers[c] < 0) continue;  // model-level stages (embedding, logits) are not a layer
    LayerTrend t{layers[c], 0, {}};
    bool any = false;
    for (std::size_t s = 0; s < model.stages().size(); ++s) {
      const Cell& cell = g->cells[s * layers.size() + c];
      if (cell.row < 0 || cell.nan || !std::isfinite(cell.score)) continue;
      t.score = std::max(t.score, cell.score);
      any = true;
    }
    if (any) out.trend.push_back(t);
  }
  if (out.trend.size() < 2) {
    out.trend.clear();
    return out;
  }
  double lo = out.trend.front().score, hi = lo;
  for (const auto& t : out.trend) lo = std::min(lo, t.score), hi = std::max(hi, t.score);
  // Log scale over the trend's own range: a rise from 1e-5 to 1e-3 of the tolerance is as visible
  // as one through it, which the heatmap's fixed scale shows as two shades of one green.
  const double floor = std::max(lo, hi * 1e-6);
  for (auto& t : out.trend) {
    const double span = std::log10(hi / floor);
    const double v = std::max(t.score, floor);
    t.colour = span > 0 && hi > 0 ? lerp(kTrendLow, kTrendHigh, std::log10(v / floor) / span) : kTrendLow;
  }
  const double first = out.trend.front().score, last = out.trend.back().score;
  out.growth = first > 0 ? last / first : (last > 0 ? INFINITY : 1);
  double before_last = 0;
  for (std::size_t i = 0; i + 1 < out.trend.size(); ++i)
    before_last = std::max(before_last, out.trend[i].score);
  const bool rising = out.growth >= kCompoundingGrowth && last >= before_last;
  const std::optional<int> start = model.info().drift_start_layer;
  out.compounding = start.has_value() || rising;
  if (out.compounding) {
    const std::string grew = std::isfinite(out.growth) ? fmt::format("{:.3g}x", out.growth) : "from zero";
    out.badge =
        start ? fmt::format(
                    "Drift starts at layer {}: chained error {} from layer {} to {}; open the Drift tab",
                    *start, grew, out.trend.front().layer, out.trend.back().layer)
              : fmt::format("Chained error compounds {} from layer {} to {}; open the Drift tab", grew,
                            out.trend.front().layer, out.trend.back().layer);
  }
  return out;
}

FailureKind failure_kind(const Cell& c) {
  if (!c.failing && !c.nan) return FailureKind::none;
  return c.inherited ? FailureKind::inherited : FailureKind::local;
}

FailureStyle failure_style(FailureKind k, float cell_w, float cell_h) {
  const float side = std::min(cell_w, cell_h);
  switch (k) {
    case FailureKind::none: return {};
    case FailureKind::local:
      // Thick enough to read at any cell size; the flag only where it leaves the fill visible.
      return {kFailBorder, std::clamp(side / 4, 1.f, 4.f), side >= 10};
    case FailureKind::inherited: return {kInheritedBorder, std::clamp(side / 6, 1.f, 2.f), false};
  }
  return {};
}

Rgba inherited_fill(Rgba score_colour) { return lerp(score_colour, kEmptyColour, 2.0 / 3.0); }

}  // namespace ds::view
