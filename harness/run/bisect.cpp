#include "bisect.h"

#include <cmath>

#include <map>
#include <tuple>

namespace ds {

std::optional<StageResult> find_culprit(const std::vector<StageResult>& results) {
  bool has_isolated = false;
  for (const auto& r : results) has_isolated |= r.mode == Mode::isolated;
  for (const auto& r : results)
    if (is_failure(r) && (!has_isolated || r.mode == Mode::isolated || r.status == Status::crashed)) return r;
  for (const auto& r : results)
    if (is_failure(r)) return r;
  return std::nullopt;
}

int mark_inherited(std::vector<StageResult>& results) {
  // The twin is the same stage of the same sequence (a batch run judges each sequence apart).
  std::map<std::tuple<int, int, std::string, int>, const StageResult*> local;
  for (const auto& r : results)
    if (r.mode == Mode::isolated) local[{r.key.step, r.key.layer, r.key.stage, r.key.seq}] = &r;
  int marked = 0;
  for (auto& r : results) {
    if (r.note.find("inherited") != std::string::npos) continue;
    auto it = local.find({r.key.step, r.key.layer, r.key.stage, r.key.seq});
    if (it != local.end() && is_inherited_failure(r, *it->second)) {
      if (!r.note.empty()) r.note += "; ";
      r.note += "inherited: local error within policy";
      ++marked;
    }
  }
  return marked;
}

std::optional<int> drift_start_layer(const std::vector<double>& error, const std::vector<double>& floor,
                                     double k) {
  const std::size_t n = std::min(error.size(), floor.size());
  for (std::size_t l = 0; l < n; ++l) {
    bool stays_out = true;
    for (std::size_t j = l; j < n && stays_out; ++j) stays_out = error[j] > k * floor[j];
    if (stays_out) return int(l);
  }
  return std::nullopt;
}

std::optional<int> drift_trend_start(const std::vector<double>& error, const std::vector<double>& floor) {
  const std::size_t n = std::min(error.size(), floor.size());
  std::vector<double> ratio(n);
  for (std::size_t l = 0; l < n; ++l) {
    if (!(floor[l] > 0) || !(error[l] > 0) || !std::isfinite(error[l])) return std::nullopt;
    ratio[l] = error[l] / floor[l];
  }
  // The rise begins at the first layer whose ratio no later layer falls below.
  std::size_t start = n;
  double suffix_min = INFINITY;
  for (std::size_t l = n; l-- > 0;)
    if (ratio[l] <= suffix_min) {
      suffix_min = ratio[l];
      start = l;
    }
  if (n - start < kTrendMinLayers) return std::nullopt;
  if (ratio[n - 1] < kTrendMinEnd || ratio[n - 1] < kTrendMinGrowth * ratio[start]) return std::nullopt;
  // Steady: log(ratio) against depth over the rise is close to a line.
  const double m = double(n - start);
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  for (std::size_t l = start; l < n; ++l) {
    const double x = double(l), y = std::log(ratio[l]);
    sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
  }
  const double cov = sxy - sx * sy / m, vx = sxx - sx * sx / m, vy = syy - sy * sy / m;
  if (!(vx > 0 && vy > 0) || cov / std::sqrt(vx * vy) < kTrendMinCorrelation) return std::nullopt;
  return int(start);
}

std::optional<DriftFinding> earliest_drift(const std::vector<StepLayers>& steps, double k) {
  for (const bool trend : {false, true}) {
    std::optional<DriftFinding> best;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const StepLayers& s = steps[i];
      const auto at = trend ? drift_trend_start(s.error, s.floor) : drift_start_layer(s.error, s.floor, k);
      if (!at) continue;
      const std::size_t a = std::size_t(*at);
      if (!best || s.layers[a] < steps[best->step_index].layers[best->at]) best = DriftFinding{i, a, trend};
    }
    if (best) return best;
  }
  return std::nullopt;
}

}  // namespace ds
