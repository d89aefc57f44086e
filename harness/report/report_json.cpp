#include <fmt/format.h>

#include <cmath>

#include "report_files.h"
#include "stage_catalog.h"

namespace ds {

namespace {
// JSON has no NaN or infinity: those become the strings "nan", "inf", "-inf".
nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}
nlohmann::json coords(std::int64_t flat, const Shape& shape) {
  if (flat < 0 || shape.empty()) return nullptr;
  return unravel(flat, shape);
}
}  // namespace

nlohmann::json stage_json(const StageResult& r) {
  const Metrics& m = r.m;
  nlohmann::json j = {
      {"step", r.key.step},
      {"layer", r.key.layer == kModelLayer ? nlohmann::json(nullptr) : nlohmann::json(r.key.layer)},
      {"stage", r.key.stage},
      {"seq", r.key.seq},
      {"mode", mode_name(r.mode)},
      {"status", status_name(r.status)},
      {"failure", is_failure(r)},
      {"expected", r.expected},
      {"cand_dtype", dtype_name(r.cand_dtype)},
      {"shape", r.shape},
      {"note", r.note}};
  if (r.status == Status::pass || r.status == Status::fail || r.status == Status::nan ||
      is_run_finding(r.status)) {
    j["metrics"] = {{"numel", m.numel},
                    {"max_abs", json_number(m.max_abs)},
                    {"max_abs_index", m.max_abs_index},
                    {"max_abs_coords", coords(m.max_abs_index, r.shape)},
                    {"max_abs_ref", json_number(m.max_abs_ref)},
                    {"max_abs_cand", json_number(m.max_abs_cand)},
                    {"mean_abs", json_number(m.mean_abs)},
                    {"rms", json_number(m.rms)},
                    {"max_rel", json_number(m.max_rel)},
                    {"max_ulp", json_number(m.max_ulp)},
                    {"mean_ulp", json_number(m.mean_ulp)},
                    {"ulp_hist", m.ulp_hist},
                    {"cosine", json_number(m.cosine)},
                    {"nmse", json_number(m.nmse)},
                    {"sqnr_db", json_number(m.sqnr_db)},
                    {"ref_rms", json_number(m.ref_rms)},
                    {"mismatches", m.mismatches},
                    {"first_mismatch", m.first_mismatch},
                    {"first_mismatch_coords", coords(m.first_mismatch, r.shape)},
                    {"first_ref", json_number(m.first_ref)},
                    {"first_cand", json_number(m.first_cand)},
                    {"nan_ref", m.nan_ref},
                    {"nan_cand", m.nan_cand},
                    {"inf_ref", m.inf_ref},
                    {"inf_cand", m.inf_cand},
                    {"first_nan", m.first_nan},
                    {"first_nan_coords", coords(m.first_nan, r.shape)},
                    {"inf_agree", m.inf_agree},
                    {"min_atol", json_number(m.min_atol)},
                    {"min_rtol", json_number(m.min_rtol)},
                    {"atol", json_number(m.atol)},
                    {"rtol", json_number(m.rtol)},
                    {"floor_max_abs", json_number(r.floor_max_abs)},
                    {"floor_rms", json_number(r.floor_rms)},
                    {"floor_mean_abs", json_number(r.floor_mean_abs)},
                    {"bias_slope", json_number(r.bias_slope)},
                    {"bias_se", json_number(r.bias_se)},
                    {"cand_hash", fmt::format("{:016x}", r.cand_hash)}};
    if (r.local.ran())
      j["metrics"]["local"] = {{"max_abs", json_number(r.local.max_abs)},
                               {"rms", json_number(r.local.rms)},
                               {"noise_max_abs", json_number(r.local.noise_max_abs)},
                               {"noise_rms", json_number(r.local.noise_rms)},
                               {"scale", json_number(r.local.scale)},
                               {"bias_slope", json_number(r.local.bias_slope)},
                               {"bias_se", json_number(r.local.bias_se)},
                               {"carried_max_abs", json_number(r.local.carried_max_abs)},
                               {"carried_rms", json_number(r.local.carried_rms)}};
    if (r.local.ran() && r.local.groups > 0)
      j["metrics"]["local"]["group"] = {{"index", r.local.group},
                                        {"of", r.local.groups},
                                        {"width", r.local.group_width},
                                        {"slope", json_number(r.local.group_slope)},
                                        {"se", json_number(r.local.group_se)}};
  }
  return j;
}

nlohmann::json report_json(const RunReport& report) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& r : report.results) stages.push_back(stage_json(r));
  const StageCounts counts = count_stages(report.results);
  nlohmann::json j = {
      {"model", report.model},
      {"candidate", report.candidate},
      {"policy", report.policy},
      {"numerics", report.numerics},
      // What the stages were judged against: null for the oracle, else --baseline's name.
      {"baseline", report.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.baseline)},
      {"verdict", report.verdict},
      {"exit_code", report.exit_code},
      {"stop_reason",
       report.stop_reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.stop_reason)},
      // Why a run with nothing to judge (a probe whose target the model lacks) exits 0; null when it ran.
      {"skipped", report.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.skipped)},
      {"batch_size", report.batch_size},
      {"judged", counts.judged},
      {"filled", counts.filled},
      {"failed", counts.failed},
      {"stages", stages}};
  if (!report.checked_twin.empty()) j["checked_twin"] = report.checked_twin;
  // Device memory candidate steps allocated and never freed (a warning unless --fail-on-leak).
  j["leaks"] = nlohmann::json::array();
  for (const LiveAllocation& a : report.leaks)
    j["leaks"].push_back(
        {{"kernel_step", a.kernel_step}, {"site", a.site}, {"blocks", a.blocks}, {"bytes", a.bytes}});
  j["first_failure"] = report.first_failure ? stage_json(*report.first_failure) : nlohmann::json(nullptr);
  // Drift across layers: checked only by a chained lane. `start_layer` null and `checked` false is an
  // isolated-only run that says nothing about drift, not "no drift".
  if (!report.results.empty()) {
    const bool checked = drift_checked(report.results);
    j["drift"] = {
        {"checked", checked},
        {"start_layer", report.drift_start ? nlohmann::json(*report.drift_start) : nlohmann::json(nullptr)},
        {"failed", report.drift_failed},
        {"text", checked ? report.drift : std::string(kDriftNotChecked)}};
  } else {
    j["drift"] = nullptr;
  }
  // The local check's verdict on the run (docs/policies.md); null where no stage had one.
  j["local_check"] =
      report.local_check.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.local_check);
  // null for a run that finished; else why it is INCOMPLETE and the last stage it flushed.
  j["incomplete"] = nullptr;
  if (const auto& inc = report.incomplete) {
    nlohmann::json last = nullptr;
    if (inc->last)
      last = {{"step", inc->last->key.step},
              {"layer", inc->last->key.layer == kModelLayer ? nlohmann::json(nullptr)
                                                            : nlohmann::json(inc->last->key.layer)},
              {"stage", inc->last->key.stage},
              {"mode", mode_name(inc->last->mode)}};
    j["incomplete"] = {
        {"reason", inc->why}, {"rows_flushed", inc->rows_flushed}, {"last_stage_flushed", last}};
  }
  return j;
}

}  // namespace ds
