// driftscope run: one parity run of a candidate against the reference.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <regex>

#include "commands.h"
#include "console.h"
#include "report_options.h"
#include "runner.h"

namespace ds::cli {

namespace {
struct RunArgs {
  RunOptions opt;
  std::string mode = "isolated";
  std::string capture = "all";
  std::string capture_layers;
  bool only_failures = false;
  ReportOptions report;
};

// "A:B" (inclusive; either side may be empty) or "N" into [min, max]; false if malformed.
bool parse_layer_range(const std::string& s, int& min, int& max) {
  try {
    const auto colon = s.find(':');
    std::size_t used = 0;
    if (colon == std::string::npos) {
      min = max = std::stoi(s, &used);
      return used == s.size();
    }
    const std::string a = s.substr(0, colon), b = s.substr(colon + 1);
    min = a.empty() ? 0 : std::stoi(a, &used);
    if (!a.empty() && used != a.size()) return false;
    max = b.empty() ? (1 << 30) : std::stoi(b, &used);
    if (!b.empty() && used != b.size()) return false;
    return min <= max;
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

void add_run_command(CLI::App& app, const std::string& command_line, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  args->opt.command_line = command_line;
  CLI::App* run = app.add_subcommand("run", "Run a candidate against the reference and compare every stage");
  run->add_option("--model,-m", args->opt.model,
                  "Model: synthetic:<preset> (e.g. synthetic:qwen2-tiny), a .gguf file, or a directory with "
                  "config.json + *.safetensors")
      ->capture_default_str();
  run->add_option("--candidate,-c", args->opt.candidate, "Candidate to judge (see `driftscope candidates`)")
      ->capture_default_str();
  run->add_option("--prompt-tokens", args->opt.prompt_tokens, "Tokens in the prefill step")
      ->capture_default_str();
  run->add_option("--decode-steps", args->opt.decode_steps, "Incremental decode steps after the prefill")
      ->capture_default_str();
  run->add_option("--gdn-variant", args->opt.gdn_variant,
                  "Fused GDN decode ops the plan requests (seeds/002), comma-separated: plain, inplace, ids, "
                  "conv-update, conv-update-ids. The capability gate refuses a candidate lacking one");
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
  run->add_option("--capture-stages", args->opt.capture_stages,
                  "Keep tensors only of stages whose name matches this regex (summary rows are always kept)");
  run->add_option("--capture-layers", args->capture_layers,
                  "Keep tensors only of layers A:B (inclusive; model-level stages are always kept)");
  run->add_flag("--only-failures", args->only_failures, "Print only failing stages in the table");
  run->add_option("--timeout", args->opt.timeout_s,
                  "Seconds one candidate step may take before it is reported as crashed (hung); 0: no limit")
      ->capture_default_str();
  run->add_flag(
      "!--no-isolate", args->opt.isolate_process,
      "Run the candidate in this process instead of a child (for gdb; a crash then kills the harness)");
  add_report_options(run, args->report);
  run->callback([args, &exit_code] {
    auto& o = args->opt;
    o.modes = args->mode == "both" ? std::vector<Mode>{Mode::isolated, Mode::chained}
                                   : std::vector<Mode>{*parse_mode(args->mode)};
    o.capture = args->capture == "all"       ? trace::Capture::all
                : args->capture == "failing" ? trace::Capture::failing
                                             : trace::Capture::stats;
    try {
      if (!args->capture_layers.empty() &&
          !parse_layer_range(args->capture_layers, o.capture_layer_min, o.capture_layer_max))
        throw InputError(fmt::format("--capture-layers {}: expected A:B or N", args->capture_layers));
      try {
        if (!o.capture_stages.empty()) (void)std::regex(o.capture_stages);
      } catch (const std::regex_error& e) {
        throw InputError(
            fmt::format("--capture-stages {}: not a valid regex: {}", o.capture_stages, e.what()));
      }
      const Policy policy = load_policy(args->report);
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
      const RunReport report = run_parity(o, policy);
      fmt::print("driftscope run: {} vs {} ({}), {} prompt tokens, {} decode steps\n", report.model,
                 report.candidate, args->mode, o.prompt_tokens, o.decode_steps);
      print_report(stdout, report, {args->only_failures, isatty(STDOUT_FILENO) != 0});
      if (!o.trace_path.empty()) fmt::print("trace: {}\n", o.trace_path);
      write_report_files(report, args->report.files);
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
