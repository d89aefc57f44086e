#include "compare_model.h"

#include <cmath>
#include <limits>

#include "colour_map.h"
#include "trace_model.h"

namespace ds::view {

double score_change(double base, double current) {
  if (std::isnan(base) || std::isnan(current)) return std::numeric_limits<double>::quiet_NaN();
  if (base == 0) return current == 0 ? 1.0 : HUGE_VAL;
  return current / base;
}

std::vector<CompareGrid> compare_grids(const TraceModel& base, const TraceModel& current) {
  std::vector<CompareGrid> out;
  for (int step : base.steps())
    for (Mode mode : base.modes()) {
      CompareGrid g{step, mode, {}, {}, 0, 0};
      for (const auto& stage : base.stages())
        for (int layer : base.layers()) {
          const Cell* a = base.cell(step, mode, layer, stage);
          const Cell* b = current.cell(step, mode, layer, stage);
          double r = std::numeric_limits<double>::quiet_NaN();
          if (a && b && a->row >= 0 && b->row >= 0) r = score_change(a->score, b->score);
          g.ratio.push_back(r);
          g.fill.push_back(a && a->row >= 0 ? change_colour(r).packed() : kEmptyColour.packed());
          g.worse += r > 2;
          g.better += r < 0.5;
        }
      out.push_back(std::move(g));
    }
  return out;
}

}  // namespace ds::view
