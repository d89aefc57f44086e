// driftscope report: re-judge a stored trace under any policy, without recomputing anything.
#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "commands.h"
#include "console.h"
#include "rejudge.h"
#include "report_options.h"
#include "runner.h"
#include "trace_reader.h"

namespace ds::cli {

namespace {
struct ReportArgs {
  std::string trace;
  bool only_failures = false;
  ReportOptions report;
};

std::string json_name(const nlohmann::json& run, const char* what) {
  if (!run.contains(what)) return "?";
  const auto& v = run[what];
  if (v.is_object() && v.contains("name")) return v["name"].get<std::string>();
  return v.is_string() ? v.get<std::string>() : v.dump();
}
}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Re-judge a stored trace under a policy and print the table (exit 1 naming failing stages)");
  cmd->add_option("trace", args->trace, "The HDF5 trace written by `driftscope run --trace`")->required();
  cmd->add_flag("--only-failures", args->only_failures, "Print only failing stages in the table");
  add_report_options(cmd, args->report);
  cmd->callback([args, &exit_code] {
    try {
      const Policy policy = load_policy(args->report);
      const trace::TraceReader trace(args->trace);
      RunReport report;
      report.model = json_name(trace.run(), "model");
      report.candidate = json_name(trace.run(), "candidate");
      report.policy = policy.name();
      for (const auto& row : trace.rows()) report.results.push_back(rejudge(trace, row, policy));
      conclude(report);
      fmt::print("driftscope report: {} ({} vs {}), policy {}\n", args->trace, report.model, report.candidate,
                 policy.name());
      if (!trace.result())
        fmt::print(
            "note: the run that wrote this trace did not finish; {} stage rows were flushed before it "
            "stopped\n",
            trace.rows().size());
      print_report(stdout, report, {args->only_failures, isatty(STDOUT_FILENO) != 0});
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
