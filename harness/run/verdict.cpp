// A run's conclusions from its judged stages: where drift begins, the first failing stage, the
// exit code and the verdict. `run` and `report` (a re-judged trace) both end here.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
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

namespace {
// How the chained error goes on from the layer where drift begins: "growing" only when it grows.
std::string course(double from, double to, int from_layer, int last_layer) {
  if (from_layer == last_layer)
    return fmt::format("{:.2g}x the floor at layer {}, the last", from, last_layer);
  if (to > from)
    return fmt::format("growing from {:.2g}x the floor to {:.2g}x by layer {}", from, to, last_layer);
  return fmt::format("{:.2g}x the floor there and {:.2g}x at layer {}", from, to, last_layer);
}
}  // namespace

void locate_drift(RunReport& report) {
  constexpr double kBand = kDefaultFloorFactor;  // the band the chained policy judges by
  // Relative chained error of each layer's output at every step, and the floor's, raised like
  // the policy's: the prefill's rows and every decode row, not only the last step's one token.
  // A batch's sequences drift each on its own (each is its own chain): never mixed.
  std::map<int, std::map<int, std::map<int, std::pair<double, double>>>> by_seq;  // seq, step, layer
  DType dtype = DType::f16;
  for (const auto& r : report.results) {
    if (r.mode != Mode::chained || r.key.stage != "residual_2" || r.key.layer < 0) continue;
    if (r.status == Status::crashed || r.status == Status::missing || std::isnan(r.floor_rms)) continue;
    const double scale = r.m.ref_rms > 0 ? r.m.ref_rms : 1.0;
    dtype = r.cand_dtype;
    by_seq[r.key.seq][r.key.step][r.key.layer] = {r.m.rms / scale,
                                                  floor_of(r.floor_rms, r.cand_dtype, r.m.ref_rms) / scale};
  }
  if (by_seq.empty()) return;
  const bool batch = by_seq.size() > 1;
  // Each sequence's steps; the drift reported is the sequence's whose drift begins earliest.
  std::vector<StepLayers> steps;
  std::optional<DriftFinding> found;
  int drift_seq = 0;
  for (const auto& [seq, by_step] : by_seq) {
    std::vector<StepLayers> seq_steps;
    for (const auto& [step, layers] : by_step) {
      StepLayers& s = seq_steps.emplace_back();
      s.step = step;
      for (const auto& [layer, ef] : layers) {
        s.layers.push_back(layer);
        s.error.push_back(ef.first);
        s.floor.push_back(ef.second);
      }
    }
    const auto f = earliest_drift(seq_steps, kBand);
    const auto layer_of = [](const std::vector<StepLayers>& ss, const DriftFinding& d) {
      return ss[d.step_index].layers[d.at];
    };
    if (steps.empty() || (f && (!found || layer_of(seq_steps, *f) < layer_of(steps, *found)))) {
      steps = std::move(seq_steps);
      found = f;
      drift_seq = seq;
    }
  }
  // The steps read: the drifting sequence's, or with no drift every sequence's.
  int first_step = steps.front().step, last_step = steps.back().step;
  if (!found)
    for (const auto& [seq, by_step] : by_seq) {
      first_step = std::min(first_step, by_step.begin()->first);
      last_step = std::max(last_step, by_step.rbegin()->first);
    }
  const std::string read = first_step == last_step ? fmt::format("step {}", first_step)
                                                   : fmt::format("steps {}..{}", first_step, last_step);
  if (!found) {
    report.drift = fmt::format(
        "No drift: the chained error of every layer output stays within {:g}x the {} noise floor, with no "
        "steady growth across layers ({}, layers {}..{}{}).",
        kBand, dtype_name(dtype), read, steps.front().layers.front(), steps.front().layers.back(),
        batch ? ", every sequence" : "");
    return;
  }
  const std::string of_seq = batch ? fmt::format(" of sequence {}", drift_seq) : std::string();
  const StepLayers& s = steps[found->step_index];
  const std::size_t i = found->at;
  const double from = s.error[i] / s.floor[i], to = s.error.back() / s.floor.back();
  report.drift_start = s.layers[i];
  const std::string where = steps.size() == 1 ? fmt::format("step {}", s.step)
                                              : fmt::format("step {}, the earliest; {} read", s.step, read);
  if (!found->trend) {
    report.drift = fmt::format(
        "Drift begins at layer {}{}: from there the chained error of the layer output stays above {:g}x the "
        "{} "
        "noise floor, {} ({}).",
        s.layers[i], of_seq, kBand, dtype_name(dtype), course(from, to, s.layers[i], s.layers.back()), where);
    return;
  }
  report.drift = fmt::format(
      "Drift begins at layer {}{}: inside the {:g}x band but compounding, the chained error of the layer "
      "output grows steadily against the {} noise floor, from {:.2g}x the floor to {:.2g}x by layer {} ({}).",
      s.layers[i], of_seq, kBand, dtype_name(dtype), from, to, s.layers.back(), where);
  // A run whose every step the local check vouched for computes as an honest engine of its
  // numerics would, step by step: the growth is what those numerics compound to on this chain.
  if (report.local_vouched) {
    report.drift +=
        " Every step is as good as an honest engine of its numerics given its own inputs (the local "
        "check), so this is the numerics' own growth, not a bug.";
    return;
  }
  // Every stage passing does not make this parity: an error that compounds layer after layer is
  // a systematic bias (24 layers can drift 10x past fp16 noise with every stage inside its band).
  if (report.exit_code == kExitParity) {
    report.exit_code = kExitFailure;
    report.drift_failed = true;
    report.verdict = fmt::format(
        "FAIL: drift begins at layer {}{} (every stage within policy, but the chained error compounds "
        "across layers, {:.2g}x to {:.2g}x the noise floor at step {})",
        s.layers[i], of_seq, from, to, s.step);
    report.verdict += baseline_note(report);
  }
}

void summarize_local_check(RunReport& report) {
  const StageResult *worst = nullptr, *first_worse = nullptr;
  std::size_t checked = 0;
  for (const auto& r : report.results) {
    if (!r.local.ran()) continue;
    ++checked;
    if (!worst || local_ratio(r) > local_ratio(*worst)) worst = &r;
    if (!first_worse && r.local_worse) first_worse = &r;
  }
  report.local_check.clear();
  report.local_vouched = false;
  if (!checked) return;
  const auto where = [](const StageResult& r) {
    return fmt::format(
        "{} of {} at step {}", r.key.stage,
        r.key.layer == kModelLayer ? std::string("the model") : fmt::format("layer {}", r.key.layer),
        r.key.step);
  };
  const std::string numerics =
      report.numerics.empty() ? std::string() : fmt::format(" ({})", report.numerics);
  if (first_worse) {
    const auto z = local_bias_z_of(*first_worse);
    report.local_check = fmt::format(
        "Local check: worse than its precision explains: first at {}, where its own step is {:.3g}x what two "
        "honest engines of its numerics{} differ by from the same inputs{}.",
        where(*first_worse), local_ratio(*first_worse), numerics,
        z ? fmt::format(", its scale against them {:.1f} standard errors from none", std::fabs(*z)) : "");
    return;
  }
  report.local_vouched = true;
  report.local_check = fmt::format(
      "Local check: as good as an honest engine of its numerics{} given its own inputs, at every one of {} "
      "stages: at worst {:.2g}x what two honest engines differ by ({}).",
      numerics, checked, local_ratio(*worst), where(*worst));
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
    // Isolated-only: each stage within policy on the reference's inputs says nothing of drift.
    if (!drift_checked(report.results)) report.verdict += fmt::format("; {}", kDriftNotChecked);
  }
  if (report.exit_code != kExitCrashed) report.verdict += baseline_note(report);
}

}  // namespace ds
