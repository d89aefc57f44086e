// What the overview points at beyond its cells: a chained error that compounds across layers
// (all of it may still pass, so every cell is cool) and the difference between a failure that
// starts at a stage and one an earlier stage fed it. The drawing code only paints what this says.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "colour_map.h"
#include "trace_model.h"

namespace ds::view {

// The worst chained error of one transformer layer at one step, relative to its tolerance.
struct LayerTrend {
  int layer = 0;
  double score = 0;  // max error_score over the layer's chained stages (NaN stages skipped)
  Rgba colour;       // on the trend's own scale: dim at its least, bright at its most
};

struct DriftMarks {
  std::vector<LayerTrend> trend;  // by layer; empty without a chained lane or with under 2 layers
  double growth = 1;              // last layer's score over the first's
  // The chained error grows across layers: the run located where drift starts, or the last layer
  // ends a decade or more above the first and above every layer before it.
  bool compounding = false;
  std::string badge;  // the overview's pointer at the Drift tab; empty when not compounding
};

// A decade of growth from the first layer to the last, with the last the worst so far, is
// compounding even where the run's drift judge did not run (or the trace predates it).
inline constexpr double kCompoundingGrowth = 10;

DriftMarks drift_marks(const TraceModel& model, int step);

// How a failing cell is set apart: a local failure (where a bug is) keeps its full hot fill and
// gets a thick red outline and a solid corner flag; an inherited one (fed an earlier stage's
// error) gets a muted fill, a thin pale-blue outline and no flag.
enum class FailureKind { none, local, inherited };
FailureKind failure_kind(const Cell& c);
struct FailureStyle {
  Rgba border;
  float border_px = 0;  // outline width for a cell of the given size
  bool corner_flag = false;
};
FailureStyle failure_style(FailureKind k, float cell_w, float cell_h);
// The fill of an inherited failure: its score's colour moved two thirds of the way to the
// background, so the eye lands on the local one first.
Rgba inherited_fill(Rgba score_colour);

}  // namespace ds::view
