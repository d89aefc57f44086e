// Phase 5, conclude (phases.h): the failures inherited from an earlier one marked, the verdict
// and the drift settled (verdict.cpp), the trace's result written. Also what a run that stopped
// early leaves in its trace.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "bisect.h"
#include "launch_log.h"
#include "phases.h"
#include "registry.h"
#include "run_json.h"
#include "trace_stub.h"

namespace ds {

namespace {

// Under --simt-memcheck, a launch memcheck could not look into found nothing because nothing
// looked: the run says how many there were and whose, and whether anything was checked at all.
void note_unchecked_launches(RunState& s) {
  RunReport& report = s.report;
  std::vector<std::string> kernels;
  std::size_t unchecked = 0;
  for (const StepLaunch& l : report.launches) {
    if (!l.launch.unchecked_by_memcheck) continue;
    ++unchecked;
    if (std::find(kernels.begin(), kernels.end(), l.launch.kernel) == kernels.end())
      kernels.push_back(l.launch.kernel);
  }
  report.memcheck_blind = unchecked == report.launches.size();
  if (unchecked > 0) {
    report.memcheck_note =
        fmt::format("memcheck: {} of {} launches were not checked, their kernels built without the CHECKED "
                    "flavour ({}){}",
                    unchecked, report.launches.size(), fmt::join(kernels, ", "),
                    report.memcheck_blind ? ": no memory error of this run could be found" : "");
  } else if (report.launches.empty()) {
    const std::string why = memcheck_blind_spot(s.opt.candidate);
    report.memcheck_note = fmt::format("memcheck: the candidate launched no SIMT kernel, so nothing was checked{}{}",
                                       why.empty() ? "" : ": ", why);
  }
  if (!report.memcheck_note.empty()) report.notes.push_back(report.memcheck_note);
}

// Device memory the candidate's steps allocated and never freed, per kernel step and line: a
// warning, or with --fail-on-leak a failure of a run that would otherwise pass.
void note_leaks(RunState& s) {
  RunReport& report = s.report;
  report.leaks = launch_log::live_allocations();
  if (report.leaks.empty()) return;
  std::uint64_t blocks = 0, bytes = 0;
  for (const LiveAllocation& a : report.leaks) {
    blocks += a.blocks;
    bytes += a.bytes;
    report.notes.push_back(
        fmt::format("leak: {} block(s), {} bytes, allocated at {} during the calls of step {} and not freed "
                    "by the end of "
                    "the run",
                    a.blocks, a.bytes, a.site, a.kernel_step));
  }
  const LiveAllocation& first = report.leaks.front();
  report.leak_summary = fmt::format(
      "{} block(s) of device memory ({} bytes) allocated during steps were never freed (first: step {}, "
      "allocated at {})",
      blocks, bytes, first.kernel_step, first.site);
  if (s.opt.fail_on_leak && report.exit_code == kExitParity) {
    report.exit_code = kExitFailure;
    report.leak_failed = true;
    report.verdict = fmt::format("FAIL: {} (--fail-on-leak)", report.leak_summary);
  }
}

}  // namespace

RunReport conclude_phase(RunState& s) {
  RunReport& report = s.report;
  if (s.opt.simt.memcheck) note_unchecked_launches(s);
  mark_inherited(report.results);
  report.crash = s.crash;
  conclude(report);
  note_leaks(s);
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
