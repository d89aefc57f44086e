// Error across layers for chosen stages: the data behind the drift plot.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "log_scale.h"
#include "result.h"

namespace ds::view {

class TraceModel;

enum class Metric { tol_ratio, max_abs, mean_abs, max_ulp, one_minus_cos };
inline constexpr Metric kMetrics[] = {Metric::tol_ratio, Metric::max_abs, Metric::mean_abs, Metric::max_ulp,
                                      Metric::one_minus_cos};
std::string_view metric_name(Metric m);   // "max |diff|", ...
std::string_view metric_field(Metric m);  // "max_abs": the summary field and its floor_ twin
double metric_value(const StageResult& r, Metric m);

struct DriftPoint {
  int layer = 0;
  double value = 0;
  double floor = -1;  // noise floor for this row and metric; < 0 when the trace has none
  int row = -1;       // summary row, for hover details and clicking through
};

struct DriftSeries {
  std::string stage;
  Mode mode = Mode::isolated;
  std::vector<DriftPoint> points;  // by layer
  bool has_floor = false;          // some point has a floor
};

// Whether any row of the trace carries a noise floor (a run with a chained or storage-precision
// reference records one per stage; NaN rows do not count).
bool has_floor_metrics(const TraceModel& model);
// Floors come with max |diff|, mean |diff| and the tolerance ratio (max |diff|'s floor over the
// stage's tolerance); ULP and 1 - cosine have none.
std::vector<DriftSeries> drift_series(const TraceModel& model, int step, std::span<const std::string> stages,
                                      Metric metric, std::span<const Mode> modes);
// The block output plus the first failing stage: what "where does it go wrong" needs first.
std::vector<std::string> default_drift_stages(const TraceModel& model);
// A log scale fitting every value and floor of the series.
LogScale drift_scale(std::span<const DriftSeries> series);

}  // namespace ds::view
