// driftscope replay TRACE --step S --layer L --stage NAME [--mode M] [--candidate C]:
// re-run the one candidate step that produced a failing stage, from the inputs stored in the
// trace, in this process (so it runs under gdb or ASan in seconds).
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "console.h"
#include "replay.h"
#include "report_options.h"
#include "runner.h"
#include "python_flag.h"
#include "simt_flags.h"

namespace ds::cli {

namespace {
struct ReplayArgs {
  ReplayRequest req;
  std::string mode = "isolated";
  ReportOptions report;
};
}  // namespace

void add_replay_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Re-run the candidate step behind one stage from the inputs stored in a trace, and judge it again");
  cmd->add_option("trace", a->req.trace,
                  "The trace (written by `driftscope run --trace`, or a merged file with --case)")
      ->required();
  cmd->add_option("--step", a->req.step, "Model step (0 = prefill)")->required();
  cmd->add_option("--layer", a->req.layer, "Layer (-1 for embed/final_norm/logits)")->required();
  cmd->add_option("--stage", a->req.stage, "Catalog stage name, e.g. residual_1")->required();
  cmd->add_option("--mode", a->mode, "Which lane's inputs: isolated or chained")
      ->check(CLI::IsMember({"isolated", "chained"}))
      ->capture_default_str();
  CLI::Option* case_opt = cmd->add_option(
      "--case", a->req.case_index,
      "Which case of a merged file (driftscope merge) to replay, from 0 (as driftscope-view --case)");
  cmd->add_option("--model,-m", a->req.model,
                  "Model to load (default: the trace's, by the path it was given or, from another directory, "
                  "its absolute path)");
  cmd->add_option("--candidate,-c", a->req.candidate,
                  "Candidate to run (default: the one in the trace), e.g. a fixed build of your kernel");
  add_simt_flags(cmd, a->req.simt);
  add_python_flag(cmd);
  add_report_options(cmd, a->report);
  cmd->callback([a, case_opt, &exit_code] {
    a->req.mode = *parse_mode(a->mode);
    try {
      // -1 stands for "no --case" inside ReplayRequest; given by hand it is just a bad index.
      if (case_opt->count() > 0 && a->req.case_index < 0)
        throw InputError(fmt::format("--case {}: cases are numbered from 0", a->req.case_index));
      const Policy policy = load_policy(a->report);
      const ReplayResult r = replay_stage(a->req, policy);
      fmt::print("replay of step '{}' ({} of layer {}, step {}, {} mode) from {}{}\n", r.kernel_step,
                 a->req.stage, a->req.layer, a->req.step, a->mode, a->req.trace,
                 a->req.case_index < 0 ? std::string() : fmt::format(" case {}", a->req.case_index));
      fmt::print("  stored:   {}\n  replayed: {}\n", format_stage_line(r.stored, false),
                 format_stage_line(r.replayed, false));
      if (!r.replayed.note.empty()) fmt::print("  why: {}\n", r.replayed.note);
      fmt::print("{}\n", r.reproduces ? "The replay reproduces the stored metrics."
                                      : "The replay differs from the stored metrics.");
      exit_code = is_failure(r.replayed) ? kExitFailure : kExitParity;
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
