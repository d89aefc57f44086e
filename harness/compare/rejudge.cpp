#include "rejudge.h"

#include <fmt/format.h>

#include <algorithm>

#include "policy_scope.h"

namespace ds {

namespace {

// Whether every element fits `t`, from metrics taken under another tolerance: sufficient
// conditions only (max |d| <= atol; or, with an rtol no smaller, the stored min_atol <= atol).
bool fits_without_tensors(const Metrics& m, Tolerance t) {
  if (!(m.max_abs <= t.atol)) return t.rtol >= m.rtol && m.min_atol <= t.atol;
  return true;
}

// The name of run[what] ({"name": ...} or a plain string); the reader has checked the types.
std::string json_name(const nlohmann::json& run, const char* what) {
  if (!run.is_object() || !run.contains(what)) return "?";
  const auto& v = run[what];
  if (v.is_object() && v.contains("name") && v["name"].is_string()) return v["name"].get<std::string>();
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// The logits summary the run stored (it does not depend on the policy); entries of the wrong
// shape are left out rather than trusted.
std::vector<LaneLogits> stored_logits(const std::optional<nlohmann::json>& result) {
  std::vector<LaneLogits> out;
  if (!result || !result->is_object() || !result->contains("logits") || !(*result)["logits"].is_object())
    return out;
  for (const auto& [name, v] : (*result)["logits"].items()) {
    const auto mode = parse_mode(name);
    if (!mode || !v.is_object() || !v.contains("max_kl") || !v["max_kl"].is_number() ||
        !v.contains("min_top1_agreement") || !v["min_top1_agreement"].is_number() ||
        !v.contains("first_token_divergence_step") || !v["first_token_divergence_step"].is_number_integer())
      continue;
    LaneLogits l{*mode, v["max_kl"].get<double>(), v["min_top1_agreement"].get<double>(),
                 v["first_token_divergence_step"].get<int>()};
    // Traces written before disagreements were counted have none: the line then says no near-tie.
    if (v.contains("disagreements") && v["disagreements"].is_number_integer() &&
        v.contains("max_disagree_margin") && v["max_disagree_margin"].is_number()) {
      l.disagreements = v["disagreements"].get<int>();
      l.max_disagree_margin = v["max_disagree_margin"].get<double>();
    }
    out.push_back(l);
  }
  return out;
}

}  // namespace

StageResult rejudge(const trace::TraceReader& trace, const trace::TraceRow& row, const Policy& policy) {
  StageResult r = row.result;
  const bool measured = r.status == Status::pass || r.status == Status::fail || r.status == Status::nan;
  if (measured) {
    const Tolerance t = policy.tolerance(r);
    if (!(t == Tolerance{r.m.atol, r.m.rtol})) {
      if (trace.has_tensors(row)) {
        const double ref_rms = r.m.ref_rms;
        const Tensor ref = trace.ref_tensor(row), cand = trace.cand_tensor(row);
        r.m = compute_metrics(ref.view(), cand.view(), r.cand_dtype, t);
        r.m.ref_rms = ref_rms;
      } else if (fits_without_tensors(r.m, t)) {
        r.m.mismatches = 0;
        r.m.first_mismatch = -1;
      } else if (r.m.mismatches == 0) {
        r.m.mismatches = 1;  // at least one, somewhere: the stored metrics cannot say where
      }
      r.m.atol = t.atol;
      r.m.rtol = t.rtol;
    }
  }
  policy.judge(r);
  return r;
}

RunReport rejudge_trace(const trace::TraceReader& trace, const Policy& policy) {
  RunReport report;
  report.model = json_name(trace.run(), "model");
  report.candidate = json_name(trace.run(), "candidate");
  report.policy = policy.name();
  // A run judged against a baseline stored the baseline's tensors as what each stage is held to, so
  // a re-judge is against that baseline too, and says so.
  if (trace.run().is_object() && trace.run().contains("baseline"))
    report.baseline = json_name(trace.run(), "baseline");
  // A batch run's reports name each row's sequence (docs/batches.md).
  if (const auto& run = trace.run(); run.is_object() && run.contains("batch") && run["batch"].is_object() &&
                                     run["batch"].contains("sequences") &&
                                     run["batch"]["sequences"].is_array())
    report.batch_size = std::max<int>(1, int(run["batch"]["sequences"].size()));
  // A rule selecting none of the trace's stages (a typo) would be silently never applied.
  std::vector<StageSite> sites;
  for (const auto& row : trace.rows()) sites.push_back({row.result.key.layer, row.result.key.stage});
  if (!sites.empty())
    if (auto why = unapplied_rule(policy, sites, fmt::format("the trace of {}", report.model)))
      throw InputError(*why);
  for (const auto& row : trace.rows()) report.results.push_back(rejudge(trace, row, policy));
  report.logits = stored_logits(trace.result());
  if (const auto& res = trace.result();
      res && res->is_object() && res->contains("crash") && (*res)["crash"].is_string())
    report.crash = (*res)["crash"].get<std::string>();
  conclude(report);
  summarize_local_check(report);
  locate_drift(report);
  if (auto why = trace.incomplete()) {
    RunReport::Incomplete inc{*why, report.results.size(), std::nullopt};
    if (!report.results.empty()) inc.last = report.results.back();
    // What the flushed stages say is kept after the sentence: a failure among them is still news.
    report.verdict = fmt::format("INCOMPLETE: {}. Of the flushed stages: {}", inc.why, report.verdict);
    // A failed trace write stored its exit code (2), which the report keeps; a killed run stored none.
    report.exit_code = std::max({report.exit_code, int(kExitFailure), trace.trace_case().exit_code});
    report.incomplete = std::move(inc);
  }
  return report;
}

}  // namespace ds
