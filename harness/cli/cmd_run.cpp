// driftscope run: one parity run of a candidate against the reference.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "commands.h"
#include "console.h"
#include "runner.h"

namespace ds::cli {

namespace {
struct RunArgs {
  RunOptions opt;
  std::string mode = "isolated";
  std::string capture = "all";
  bool only_failures = false;
};
}  // namespace

void add_run_command(CLI::App& app, const std::string& command_line, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  args->opt.command_line = command_line;
  CLI::App* run = app.add_subcommand("run", "Run a candidate against the reference and compare every stage");
  run->add_option("--model,-m", args->opt.model, "Model: synthetic:<preset> (e.g. synthetic:qwen2-tiny)")
      ->capture_default_str();
  run->add_option("--candidate,-c", args->opt.candidate, "Candidate to judge (see `driftscope candidates`)")
      ->capture_default_str();
  run->add_option("--prompt-tokens", args->opt.prompt_tokens, "Tokens in the prefill step")->capture_default_str();
  run->add_option("--decode-steps", args->opt.decode_steps, "Incremental decode steps after the prefill")
      ->capture_default_str();
  run->add_option("--seed", args->opt.seed, "Seed of the synthetic weights and the prompt tokens")
      ->capture_default_str();
  run->add_option("--layers", args->opt.layers, "Run only the first N layers of the model (0: all)")
      ->capture_default_str();
  run->add_option("--mode", args->mode,
                  "isolated: every candidate step gets the reference's inputs (local error); chained: the "
                  "candidate consumes its own outputs (accumulated error); both: record both")
      ->check(CLI::IsMember({"isolated", "chained", "both"}))
      ->capture_default_str();
  run->add_option("--trace,-o", args->opt.trace_path, "Write the HDF5 trace here");
  run->add_option("--capture", args->capture,
                  "Which stage tensors the trace keeps: all, failing (only failing stages), stats (none)")
      ->check(CLI::IsMember({"all", "failing", "stats"}))
      ->capture_default_str();
  run->add_flag("--only-failures", args->only_failures, "Print only failing stages in the table");
  run->add_option("--timeout", args->opt.timeout_s,
                  "Seconds one candidate step may take before it is reported as crashed (hung); 0: no limit")
      ->capture_default_str();
  run->add_flag("!--no-isolate", args->opt.isolate_process,
                "Run the candidate in this process instead of a child (for gdb; a crash then kills the harness)");
  run->callback([args, &exit_code] {
    auto& o = args->opt;
    o.modes = args->mode == "both" ? std::vector<Mode>{Mode::isolated, Mode::chained}
                                   : std::vector<Mode>{*parse_mode(args->mode)};
    o.capture = args->capture == "all" ? trace::Capture::all
                : args->capture == "failing" ? trace::Capture::failing
                                             : trace::Capture::stats;
    try {
      // A progress bar on a terminal: one tick per reference layer.
      if (isatty(STDERR_FILENO)) {
        const ModelConfig cfg = load_config_spec(o.model, o.layers);
        const int total = cfg.n_layers * (o.decode_steps + 1);
        auto done = std::make_shared<int>(0);
        o.on_event = [total, done](std::string_view e) {
          if (e != "reference_layer") return;
          ++*done;
          const int width = 30, filled = width * *done / std::max(total, 1);
          fmt::print(stderr, "\r[{}{}] {}/{} layers{}", std::string(std::size_t(filled), '#'),
                     std::string(std::size_t(width - filled), ' '), *done, total, *done == total ? "\n" : "");
        };
      }
      const RunReport report = run_parity(o, Policy::dtype_defaults());
      fmt::print("driftscope run: {} vs {} ({}), {} prompt tokens, {} decode steps\n", report.model, report.candidate,
                 args->mode, o.prompt_tokens, o.decode_steps);
      print_report(stdout, report, {args->only_failures, isatty(STDOUT_FILENO) != 0});
      if (!o.trace_path.empty()) fmt::print("trace: {}\n", o.trace_path);
      exit_code = report.exit_code;
    } catch (const GateRefusal& e) {
      fmt::print(stderr, "{}\n", e.what());
      exit_code = kExitRefused;
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
