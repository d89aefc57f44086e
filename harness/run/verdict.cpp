// A run's conclusions from its judged stages: where drift begins, the first failing stage, the
// exit code and the verdict. `run` and `report` (a re-judged trace) both end here.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bisect.h"
#include "policy.h"
#include "runner.h"
#include "stage_catalog.h"

namespace ds {

namespace {
// Every report format carries the verdict: a pass against a baseline is not one against the oracle.
std::string baseline_note(const RunReport& report) {
  return report.baseline.empty()
             ? std::string()
             : fmt::format(" (judged against baseline {}, not the oracle)", report.baseline);
}
}  // namespace

void locate_drift(RunReport& report) {
  constexpr double kBand = kDefaultFloorFactor;  // the band the chained policy judges by
  int last_step = -1;
  for (const auto& r : report.results)
    if (r.mode == Mode::chained) last_step = std::max(last_step, r.key.step);
  if (last_step < 0) return;
  // Relative chained error of each layer's output, and the floor's, raised like the policy's.
  std::map<int, std::pair<double, double>> by_layer;
  DType dtype = DType::f16;
  for (const auto& r : report.results) {
    if (r.mode != Mode::chained || r.key.step != last_step || r.key.stage != "residual_2" || r.key.layer < 0)
      continue;
    if (r.status == Status::crashed || r.status == Status::missing || std::isnan(r.floor_rms)) continue;
    const double scale = r.m.ref_rms > 0 ? r.m.ref_rms : 1.0;
    dtype = r.cand_dtype;
    by_layer[r.key.layer] = {r.m.rms / scale, floor_of(r.floor_rms, r.cand_dtype, r.m.ref_rms) / scale};
  }
  if (by_layer.empty()) return;
  std::vector<double> err, floor;
  std::vector<int> layers;
  for (const auto& [layer, ef] : by_layer) {
    layers.push_back(layer);
    err.push_back(ef.first);
    floor.push_back(ef.second);
  }
  const auto at = drift_start_layer(err, floor, kBand);
  if (!at) {
    if (const auto rise = drift_trend_start(err, floor)) {
      const std::size_t i = std::size_t(*rise);
      report.drift_start = layers[i];
      report.drift = fmt::format(
          "Drift begins at layer {}: inside the {:g}x band but compounding, the chained error of the layer "
          "output grows steadily against the {} noise floor, from {:.2g}x the floor to {:.2g}x by layer {} "
          "(step {}).",
          layers[i], kBand, dtype_name(dtype), err[i] / floor[i], err.back() / floor.back(), layers.back(),
          last_step);
      // Every stage passing does not make this parity: an error that compounds layer after layer is
      // a systematic bias (24 layers can drift 10x past fp16 noise with every stage inside its band), so the
      // run fails.
      if (report.exit_code == kExitParity) {
        report.exit_code = kExitFailure;
        report.drift_failed = true;
        report.verdict = fmt::format(
            "FAIL: drift begins at layer {} (every stage within policy, but the chained error compounds "
            "across layers, {:.2g}x to {:.2g}x the noise floor)",
            layers[i], err[i] / floor[i], err.back() / floor.back());
        report.verdict += baseline_note(report);
      }
      return;
    }
    report.drift = fmt::format(
        "No drift: the chained error of every layer output stays within {:g}x the {} noise floor, with no "
        "steady growth across layers (step {}, layers {}..{}).",
        kBand, dtype_name(dtype), last_step, layers.front(), layers.back());
    return;
  }
  report.drift_start = layers[std::size_t(*at)];
  report.drift = fmt::format(
      "Drift begins at layer {}: from there the chained error of the layer output stays above {:g}x the {} "
      "noise floor, growing from {:.2g}x the floor to {:.2g}x by layer {} (step {}).",
      *report.drift_start, kBand, dtype_name(dtype), err[std::size_t(*at)] / floor[std::size_t(*at)],
      err.back() / floor.back(), layers.back(), last_step);
}

void conclude(RunReport& report) {
  report.first_failure = find_culprit(report.results);
  const auto& f = report.first_failure;
  auto where = [](const StageResult& r) {
    return fmt::format(
        "{} of {} at step {}", r.key.stage,
        r.key.layer == kModelLayer ? std::string("the model") : fmt::format("layer {}", r.key.layer),
        r.key.step);
  };
  const StageResult* crashed = nullptr;
  for (const auto& r : report.results)
    if (r.status == Status::crashed && !crashed) crashed = &r;
  if (crashed || !report.crash.empty()) {
    report.exit_code = kExitCrashed;
    report.verdict = fmt::format("CRASHED: {}",
                                 report.crash.empty() ? std::string("the candidate crashed") : report.crash);
    if (crashed) report.verdict += fmt::format(" (stage {})", where(*crashed));
    if (f && f->status != Status::crashed)
      report.verdict += fmt::format("; an earlier stage already failed: {}", where(*f));
  } else if (count_stages(report.results).judged == 0) {
    report.exit_code = kExitFailure;
    report.verdict = "FAIL: no stage was judged (nothing was compared), so parity is not shown";
  } else if (f) {
    report.exit_code = kExitFailure;
    report.verdict = fmt::format("FAIL: first failing stage is {} ({}, {})", where(*f),
                                 status_name(f->status), mode_name(f->mode));
  } else {
    const StageCounts n = count_stages(report.results);
    report.exit_code = kExitParity;
    report.verdict = fmt::format("PASS: {} stages within policy", n.judged);
    if (n.filled) report.verdict += fmt::format(" ({} more filled by the reference, not judged)", n.filled);
  }
  if (report.exit_code != kExitCrashed) report.verdict += baseline_note(report);
}

}  // namespace ds
