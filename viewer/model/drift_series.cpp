#include "drift_series.h"

#include <algorithm>
#include <cmath>

#include "trace_model.h"

namespace ds::view {

std::string_view metric_name(Metric m) {
  switch (m) {
    case Metric::tol_ratio: return "max |diff| / tolerance";
    case Metric::max_abs: return "max |diff|";
    case Metric::mean_abs: return "mean |diff|";
    case Metric::max_ulp: return "max ULP";
    case Metric::one_minus_cos: return "1 - cosine";
  }
  return "?";
}

std::string_view metric_field(Metric m) {
  switch (m) {
    case Metric::tol_ratio: return "tol_ratio";
    case Metric::max_abs: return "max_abs";
    case Metric::mean_abs: return "mean_abs";
    case Metric::max_ulp: return "max_ulp";
    case Metric::one_minus_cos: return "one_minus_cos";
  }
  return "?";
}

double metric_value(const StageResult& r, Metric m) {
  switch (m) {
    case Metric::tol_ratio: return error_score(r.m);
    case Metric::max_abs: return r.m.max_abs;
    case Metric::mean_abs: return r.m.mean_abs;
    case Metric::max_ulp: return r.m.max_ulp;
    case Metric::one_minus_cos: return std::max(0.0, 1 - r.m.cosine);
  }
  return 0;
}

std::vector<DriftSeries> drift_series(const TraceModel& model, int step, std::span<const std::string> stages,
                                      Metric metric, std::span<const Mode> modes) {
  std::vector<DriftSeries> out;
  const auto floor_it = model.extras().find("floor_" + std::string(metric_field(metric)));
  const std::vector<double>* floors = floor_it == model.extras().end() ? nullptr : &floor_it->second;
  for (const auto& stage : stages)
    for (Mode mode : modes) {
      DriftSeries s{stage, mode, {}, floors != nullptr};
      for (int layer : model.layers()) {
        const trace::TraceRow* row = model.row(step, mode, layer, stage);
        if (!row) continue;
        const int i = int(row - model.rows().data());
        s.points.push_back(
            {layer, metric_value(row->result, metric), floors ? (*floors)[std::size_t(i)] : -1, i});
      }
      if (!s.points.empty()) out.push_back(std::move(s));
    }
  return out;
}

std::vector<std::string> default_drift_stages(const TraceModel& model) {
  std::vector<std::string> out;
  // The last stage of a block is its output, the one that carries drift to the next layer.
  std::string last_block;
  for (const auto& s : model.stages())
    for (const auto& row : model.rows())
      if (row.result.key.stage == s && row.result.key.layer >= 0) {
        last_block = s;
        break;
      }
  if (!last_block.empty()) out.push_back(last_block);
  for (const auto& row : model.rows())
    if (is_failure(row.result.status)) {
      if (row.result.key.stage != last_block) out.push_back(row.result.key.stage);
      break;
    }
  return out;
}

LogScale drift_scale(std::span<const DriftSeries> series) {
  std::vector<double> v;
  for (const auto& s : series)
    for (const auto& p : s.points) {
      v.push_back(p.value);
      if (p.floor > 0) v.push_back(p.floor);
    }
  return fit_log_scale(v);
}

}  // namespace ds::view
