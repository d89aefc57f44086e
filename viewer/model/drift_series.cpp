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

namespace {

// The /summary field holding the noise floor of a metric; "" when the trace stores none for it
// (ULP and cosine floors are not recorded). The tolerance ratio's floor is max |diff|'s over the
// same tolerance, so the band sits where the curve would if the candidate were only as far off as
// its own storage precision.
std::string floor_field(Metric m) {
  switch (m) {
    case Metric::tol_ratio:
    case Metric::max_abs: return "floor_max_abs";
    case Metric::mean_abs: return "floor_mean_abs";
    default: return {};
  }
}

}  // namespace

bool has_floor_metrics(const TraceModel& model) {
  for (const auto& [name, values] : model.extras())
    if (std::any_of(values.begin(), values.end(), [](double v) { return std::isfinite(v) && v >= 0; }))
      return true;
  return false;
}

std::vector<DriftSeries> drift_series(const TraceModel& model, int step, std::span<const std::string> stages,
                                      Metric metric, std::span<const Mode> modes) {
  std::vector<DriftSeries> out;
  const auto floor_it = model.extras().find(floor_field(metric));
  const std::vector<double>* floors = floor_it == model.extras().end() ? nullptr : &floor_it->second;
  for (const auto& stage : stages)
    for (Mode mode : modes) {
      DriftSeries s{stage, mode, {}, false};
      for (int layer : model.layers()) {
        const trace::TraceRow* row = model.row(step, mode, layer, stage);
        if (!row) continue;
        const std::size_t i = std::size_t(row - model.rows().data());
        double floor = floors ? (*floors)[i] : -1;
        if (!std::isfinite(floor) || floor < 0) floor = -1;  // NaN: no floor for this row
        if (floor >= 0 && metric == Metric::tol_ratio) {
          const Metrics& m = row->result.m;
          const double tol = m.atol + m.rtol * m.ref_rms;
          floor = tol > 0 ? floor / tol : -1;
        }
        s.has_floor |= floor >= 0;
        s.points.push_back({layer, metric_value(row->result, metric), floor, int(i)});
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
