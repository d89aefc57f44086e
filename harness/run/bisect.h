// Bisection over a finished run: which stage is the culprit (the first whose *local* error
// breaks the policy), which failures are only inherited, and where drift begins.
#pragma once

#include <optional>
#include <vector>

#include "result.h"

namespace ds {

// The first failing stage by local (isolated) error when the run has isolated results, else the
// first failing stage in execution order.
std::optional<StageResult> find_culprit(const std::vector<StageResult>& results);

// In a run with both modes, a chained failure whose isolated twin passes is inherited drift,
// not a local bug: note it so on the result. Returns how many were marked.
int mark_inherited(std::vector<StageResult>& results);

// Where drift begins: given the chained error of each layer's output and the noise floor of
// the same layers, the first layer from which the error stays above the band (error > k * floor)
// at every later layer, whether it then grows or shrinks (an error 800x the floor that falls to
// 200x is still out of the band from its first layer). Returns its index; nullopt when the last
// layer is inside the band.
std::optional<int> drift_start_layer(const std::vector<double>& error, const std::vector<double>& floor,
                                     double k);

// Drift that stays inside the band but compounds (a small systematic bias fed forward layer by
// layer): the ratio error / floor rises steadily with depth. From the first layer whose ratio no
// later layer falls below, at least kTrendMinLayers layers whose log-ratio follows depth (Pearson
// correlation >= kTrendMinCorrelation), ending at least kTrendMinEnd x the floor and at least
// kTrendMinGrowth x the ratio where the rise began. Returns that first layer; nullopt otherwise.
// A correct candidate's ratio wanders around 1 without a trend, and these bounds leave it alone.
inline constexpr std::size_t kTrendMinLayers = 4;
inline constexpr double kTrendMinCorrelation = 0.9;
inline constexpr double kTrendMinEnd = 2;
inline constexpr double kTrendMinGrowth = 2;
std::optional<int> drift_trend_start(const std::vector<double>& error, const std::vector<double>& floor);

// The chained error of every layer output at one model step, and the floor of the same layers.
struct StepLayers {
  int step = 0;
  std::vector<int> layers;
  std::vector<double> error, floor;
};
// Where drift begins over a whole run: the band rule (drift_start_layer) on every step, prefill
// and decode alike, and the earliest layer any step names (the earliest step among equals); only
// when no step leaves the band, the trend rule the same way. So adding decode steps can move it
// only to an earlier layer that a new step shows, never back and forth with their count.
struct DriftFinding {
  std::size_t step_index = 0;  // into the steps given
  std::size_t at = 0;          // index into that step's layers
  bool trend = false;          // found by the trend rule, inside the band
};
std::optional<DriftFinding> earliest_drift(const std::vector<StepLayers>& steps, double k);

}  // namespace ds
