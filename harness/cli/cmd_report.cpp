// driftscope report: re-judge a stored trace under any policy, without recomputing anything.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "commands.h"
#include "console.h"
#include "launch_profile.h"
#include "matrix_report.h"
#include "rejudge.h"
#include "report_options.h"
#include "runner.h"
#include "trace_reader.h"

namespace ds::cli {

namespace {
struct ReportArgs {
  std::string trace;
  bool only_failures = false;
  bool profile = false;
  ReportOptions report;
};

// A run that stopped before any stage (refused by a gate, bad input, a probe with nothing to aim
// at): nothing to re-judge, only the reason it recorded, which is the case's verdict under any
// policy.
void print_stopped(const trace::TraceCase& c) {
  fmt::print("{} (exit {}): the run stopped before any stage ran\n{}\n",
             c.status == trace::kStatusRefused   ? "REFUSED"
             : c.status == trace::kStatusSkipped ? "SKIPPED"
                                                 : "BAD-INPUT",
             c.exit_code, c.reason.empty() ? c.verdict : c.reason);
}

void print_trace_profile(const trace::TraceReader& trace) {
  if (const auto launches = trace.launches())
    print_launch_profile(stdout, *launches);
  else
    fmt::print(
        "\nkernel launches: this trace has no /launches table (written by a driftscope "
        "older than launch records)\n");
}

// A merged file: every case re-judged, then the matrix summary. A case whose run did not finish
// is INCOMPLETE (rejudge_trace), as a single trace is.
int report_merged(const ReportArgs& args, const Policy& policy, const std::vector<trace::TraceCase>& cases) {
  std::vector<CaseOutcome> outcomes;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const trace::TraceCase& c = cases[k];
    const trace::TraceReader trace(args.trace, c.group);
    CaseSpec spec{c.index >= 0 ? c.index : int(k), c.of > 0 ? c.of : int(cases.size()), c.model, c.candidate,
                  c.seed};
    fmt::print("\n=== case {}/{} ({}): {} ===\n", spec.index, spec.of, c.group, c.key());
    if (c.stopped_early()) {
      fmt::print("driftscope report: {} ({} vs {}), from {}\n", c.group, c.model, c.candidate,
                 c.source.empty() ? "?" : c.source);
      print_stopped(c);
      CaseOutcome out{spec, c.shard, c.exit_code};
      if (c.status == trace::kStatusSkipped) {  // nothing to judge: SKIPPED, neither a pass nor an error
        out.report = stopped_report(c.model, c.candidate, policy.name(), c.exit_code, c.verdict);
        out.report->skipped = c.reason.empty() ? c.verdict : c.reason;
      } else {
        out.error = c.reason.empty() ? c.verdict : c.reason;
      }
      out.trace = fmt::format("{}:{}", args.trace, c.group);
      out.command_line = c.command_line;
      outcomes.push_back(std::move(out));
      continue;
    }
    RunReport report = rejudge_trace(trace, policy);
    fmt::print("driftscope report: {} ({} vs {}{}), policy {}, from {}\n", c.group, report.model,
               report.candidate, against_baseline(report), policy.name(), c.source.empty() ? "?" : c.source);
    print_report(stdout, report, {args.only_failures, isatty(STDOUT_FILENO) != 0});
    if (args.profile) print_trace_profile(trace);
    CaseOutcome out{spec, c.shard, report.exit_code};
    out.finished = !report.incomplete;
    out.trace = fmt::format("{}:{}", args.trace, c.group);
    out.command_line = c.command_line;
    out.report = std::move(report);
    outcomes.push_back(std::move(out));
  }
  print_matrix_summary(stdout, outcomes);
  write_matrix_files(outcomes, args.report.files);
  return matrix_exit_code(outcomes);
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Re-judge a stored trace (or every case of a merged file) under a policy and print the table (exit 1 "
      "naming failing stages)");
  cmd->add_option("trace", args->trace,
                  "The HDF5 trace written by `driftscope run --trace` or `driftscope merge`")
      ->required();
  cmd->add_flag("--only-failures", args->only_failures,
                "List only failing rows (else every row of the trace)");
  cmd->add_flag("--profile", args->profile,
                "After the table, the kernel launches the trace recorded (/launches) per step and per layer");
  add_report_options(cmd, args->report);
  cmd->callback([args, &exit_code] {
    try {
      const Policy policy = load_policy(args->report);
      const auto cases = trace::list_cases(args->trace);
      if (cases.size() != 1 || cases.front().group != "/") {
        exit_code = report_merged(*args, policy, cases);
        return;
      }
      const trace::TraceReader trace(args->trace);
      if (const trace::TraceCase& c = trace.trace_case(); c.stopped_early()) {
        fmt::print("driftscope report: {} ({} vs {})\n", args->trace, c.model, c.candidate);
        print_stopped(c);
        RunReport stopped = stopped_report(c.model, c.candidate, policy.name(), c.exit_code, c.verdict);
        stopped.stop_reason = c.reason.empty() ? c.verdict : c.reason;
        if (c.status == trace::kStatusSkipped) stopped.skipped = stopped.stop_reason;
        write_report_files(stopped, args->report.files);
        exit_code = c.exit_code;
        return;
      }
      const RunReport report = rejudge_trace(trace, policy);
      fmt::print("driftscope report: {} ({} vs {}{}), policy {}\n", args->trace, report.model,
                 report.candidate, against_baseline(report), policy.name());
      print_report(stdout, report, {args->only_failures, isatty(STDOUT_FILENO) != 0});
      if (args->profile) print_trace_profile(trace);
      write_report_files(report, args->report.files);
      exit_code = report.exit_code;
    } catch (const trace::TraceError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
