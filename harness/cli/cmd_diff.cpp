// driftscope diff: baseline trace vs current trace; exit 1 on any regression.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "runner.h"
#include "stage_catalog.h"
#include "trace_diff.h"

namespace ds::cli {

namespace {
struct DiffArgs {
  std::string base, current;
  trace::DiffOptions opt;
};
}  // namespace

void add_diff_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two traces stage by stage (step, layer, stage, mode); exit 1 when the current one regressed");
  cmd->add_option("base", args->base, "Baseline trace")->required();
  cmd->add_option("current", args->current, "Current trace")->required();
  cmd->add_option("--factor", args->opt.factor,
                  "An error (max |diff| or RMS) that grew by more than this regressed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([args, &exit_code] {
    try {
      const trace::TraceReader base(args->base), cur(args->current);
      const trace::DiffReport d = trace::diff_traces(base, cur, args->opt);
      for (const auto& f : d.findings)
        fmt::print("{:<13} step {:>3} {:>6} {:<12} {:<8} {}\n", trace::finding_name(f.kind), f.key.step,
                   f.key.layer == kModelLayer ? std::string("model") : fmt::format("L{}", f.key.layer),
                   f.key.stage, mode_name(f.mode), f.message);
      std::size_t regressions = 0;
      for (const auto& f : d.findings) regressions += f.regression;
      fmt::print(
          "{} stages matched, {} only in the baseline, {} only in the current trace; {} regression(s)\n",
          d.matched, d.only_base, d.only_current, regressions);
      fmt::print("{}\n", d.regressed() ? "REGRESSED" : "NO REGRESSION");
      exit_code = d.regressed() ? kExitFailure : kExitParity;
    } catch (const trace::TraceError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
