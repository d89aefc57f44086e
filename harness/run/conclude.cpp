// Phase 5, conclude (phases.h): the failures inherited from an earlier one marked, the verdict
// and the drift settled (verdict.cpp), the trace's result written. Also what a run that stopped
// early leaves in its trace.
#include "bisect.h"
#include "phases.h"
#include "run_json.h"
#include "trace_stub.h"

namespace ds {

RunReport conclude_phase(RunState& s) {
  RunReport& report = s.report;
  mark_inherited(report.results);
  report.crash = s.crash;
  conclude(report);
  summarize_local_check(report);
  locate_drift(report);
  const auto& f = report.first_failure;
  if (s.trace) {
    nlohmann::json res = {{"status", trace::kStatusRan},
                          {"verdict", report.verdict},
                          {"exit_code", report.exit_code},
                          {"tokens", report.tokens}};
    // A crash in load() or a plan leaves no crashed row: `report` reads the exit 4 from here.
    if (!s.crash.empty()) res["crash"] = s.crash;
    if (!report.drift.empty()) {
      res["drift"] = report.drift;
      res["drift_start_layer"] =
          report.drift_start ? nlohmann::json(*report.drift_start) : nlohmann::json(nullptr);
    }
    for (const auto& l : report.logits)
      res["logits"][std::string(mode_name(l.mode))] = {
          {"max_kl", l.max_kl},
          {"min_top1_agreement", l.min_top1},
          {"first_token_divergence_step", l.first_token_divergence},
          {"disagreements", l.disagreements},
          {"max_disagree_margin", l.max_disagree_margin}};
    if (f)
      res["first_failure"] = {{"step", f->key.step},
                              {"layer", f->key.layer},
                              {"stage", f->key.stage},
                              {"mode", mode_name(f->mode)},
                              {"first_mismatch", f->m.first_mismatch}};
    s.trace->finish(res);
  }
  return std::move(s.report);
}

RunReport skipped_run(RunState& s, const ModelConfig& header, const std::string& why) {
  leave_stopped_trace(s, trace::kStatusSkipped, kExitParity, why);
  RunReport r = stopped_report(header.name, s.opt.candidate, s.policy.name(), kExitParity, "SKIPPED: " + why);
  r.skipped = why;
  r.probe = s.report.probe;
  r.prompt_tokens = s.report.prompt_tokens;
  r.decode_steps = s.report.decode_steps;
  r.from_step = s.report.from_step;
  r.modes = s.opt.modes;
  r.notes = s.report.notes;
  return r;
}

// Best effort: the stop itself is what the caller reports, and a trace path that cannot be
// written was already named by the error that stopped the run.
void leave_stopped_trace(RunState& s, const char* status, int exit_code, const std::string& reason) {
  if (s.opt.trace_path.empty()) return;
  const trace::StoppedRun stop{status, exit_code, reason, s.stop_ops[0], s.stop_ops[1], s.stop_ops[2]};
  try {
    if (s.trace) {
      s.trace->finish(trace::stopped_result(stop));
      s.trace.reset();
    } else {
      trace::write_stopped_trace(s.opt.trace_path, trace_root_json(s.opt),
                                 s.run_json(s.header ? &*s.header : nullptr), stop);
    }
  } catch (const trace::TraceError& e) {
    leave_write_failure(s, e.what());
  }
}

bool leave_write_failure(RunState& s, const std::string& reason) {
  if (!s.trace) return false;
  const trace::StoppedRun stop{trace::kStatusWriteFailed, kExitUsage, reason, {}, {}, {}};
  const bool stored = s.trace->record_failure(trace::stopped_result(stop));
  s.trace.reset();
  return stored;
}

}  // namespace ds
