// Baseline vs current: per-cell ratio of the error scores, on the baseline's layer x stage grid.
#pragma once

#include <cstdint>
#include <vector>

#include "result.h"

namespace ds::view {

class TraceModel;

struct CompareGrid {
  int step = 0;
  Mode mode = Mode::isolated;
  std::vector<double> ratio;        // current / baseline score; NaN where either side lacks the cell
  std::vector<std::uint32_t> fill;  // change_colour(ratio), computed once
  int worse = 0, better = 0;        // cells that changed by more than 2x
};

// current score / baseline score, with 0/0 = 1 (both exact) and x/0 = +inf (new error).
double score_change(double base, double current);
std::vector<CompareGrid> compare_grids(const TraceModel& base, const TraceModel& current);

}  // namespace ds::view
