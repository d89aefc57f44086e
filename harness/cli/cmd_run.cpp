// driftscope run: one parity run of a candidate against the reference.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>

#include "commands.h"
#include "console.h"
#include "launch_profile.h"
#include "matrix.h"
#include "memory_estimate.h"
#include "simt_flags.h"
#include "python_flag.h"
#include "timeout_flag.h"
#include "matrix_report.h"
#include "prompt.h"
#include "numerics.h"
#include "probes.h"
#include "progress_meter.h"
#include "parallel.h"
#include "registry.h"
#include "synthetic.h"
#include "report_options.h"
#include "runner.h"
#include "shard_auto.h"
#include "stage_catalog.h"

namespace ds::cli {

namespace {
struct RunArgs {
  RunOptions opt;
  std::vector<std::string> argv;
  std::vector<std::string> models{RunOptions{}.model}, candidates{RunOptions{}.candidate};
  std::vector<std::uint64_t> seeds{RunOptions{}.seed};
  std::vector<std::string> probes{""};  // "" = no probe; --probe all: every probe, a case each
  std::string shard, trace_dir;
  std::string mode = "isolated";
  std::string fill = "none";
  std::string capture = "all";
  std::string capture_layers;
  std::string tokens;
  std::string widths = "as-is";
  bool only_failures = false;
  bool all_rows = false;
  bool progress = false;
  bool profile = false;
  bool simt_threads_given = false;  // --simt-threads: otherwise chosen per candidate (run_and_print)
  ReportOptions report;
};

// --widths odd: each synthetic preset becomes its family's -tails-tiny preset, whose widths are off
// every vector and tile multiple, where a kernel's tail bugs show. A model file has the widths it
// has: it is refused, naming the presets that do the job.
std::vector<std::string> with_odd_widths(const std::vector<std::string>& models) {
  constexpr std::string_view kSynthetic = "synthetic:";
  std::vector<std::string> out;
  for (const std::string& m : models) {
    if (!m.starts_with(kSynthetic)) {
      // Name the file's own family's preset when its config reads; every tails preset otherwise.
      std::vector<std::string> tails;
      for (const std::string& p : ref::synthetic_presets())
        if (p.ends_with("-tails-tiny")) tails.push_back("synthetic:" + p);
      try {
        const Family family = load_config_spec(m, 0).family;
        std::erase_if(tails, [&](const std::string& t) {
          return ref::synthetic_config(t.substr(kSynthetic.size())).family != family;
        });
      } catch (const std::exception&) {
      }
      throw InputError(fmt::format(
          "--widths odd applies to synthetic presets only; {} is a model file, whose widths are its own. Run "
          "its family at odd widths with --model {}",
          m,
          tails.empty() ? std::string("synthetic:<family>-tails-tiny")
                        : fmt::format("{}", fmt::join(tails, " or "))));
    }
    try {
      out.push_back(fmt::format("synthetic:{}", ref::synthetic_tails_preset(m.substr(kSynthetic.size()))));
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--widths odd: {}", e.what()));
    }
    if (out.back() != m) fmt::print("--widths odd: {} runs as {}\n", m, out.back());
  }
  return out;
}

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
// "2 of 24 layers (--layers 2), " or "all 24 layers, ": how much of the model the header's verdict covers.
std::string layers_run_text(const RunOptions& o) {
  try {
    const int total = load_config_spec(o.model, 0).n_layers;
    return o.layers > 0 && o.layers < total
               ? fmt::format("{} of {} layers (--layers {}), ", o.layers, total, o.layers)
               : fmt::format("all {} layers, ", total);
  } catch (const InputError&) {
    return std::string();  // the run itself settled the model; nothing more to say here
  }
}

// One parity run, printed as its header and table: the single-case run and each matrix case.
RunReport run_and_print(const RunArgs& args, RunOptions o, const Policy& policy) {
  // Our own simt kernels are race-free between blocks (check's hazard and schedule parts pass them on
  // every tiny preset, cli.verify_correct): by default their blocks spread over the cores
  // cpu-f16's loops use. Every other SIMT candidate (a mutant, a plugin, a bare .cu) keeps one host
  // thread, where a kernel whose blocks race still gives the same bits on every run; so do the
  // checkers, which watch one schedule.
  const SimtOptions asked = o.simt;
  if (!args.simt_threads_given && !serves_checked_kernels(o.simt) && simt_blocks_race_free(o.candidate))
    o.simt.threads = unsigned(configured_threads());
  // Where the run is, on a terminal (or with --progress in a log): its layers, and a clock that
  // moves while a layer or a weight load takes long.
  std::optional<ProgressMeter> meter;
  const ProgressMeter::Style style = ProgressMeter::style_for(args.progress);
  if (style != ProgressMeter::Style::off) try {
      const ModelConfig cfg = load_config_spec(o.model, o.layers);
      meter.emplace(style, stderr);
      meter->begin("run", cfg.n_layers, o.decode_steps + 1);
      o.on_event = meter->observer();
    } catch (const InputError&) {
      // No meter: run_parity reports the bad model and leaves its stopped trace.
    }
  const RunReport report = run_parity(o, policy);
  meter.reset();
  // The runner settles the modes (a dump runs chained unless --mode says otherwise).
  const std::string modes = report.modes.size() == 2   ? std::string("both")
                            : report.modes.size() == 1 ? std::string(mode_name(report.modes.front()))
                                                       : args.mode;
  fmt::print("driftscope run: {} vs {} ({}), {}{} prompt tokens, {} decode steps{}{}\n", report.model,
             report.candidate, modes, layers_run_text(o), report.prompt_tokens, report.decode_steps,
             against_baseline(report),
             report.from_step > 0 ? fmt::format("; steps 0-{} on the reference only (--from-step {})",
                                                report.from_step - 1, report.from_step)
                                  : std::string());
  if (!report.probe.empty()) {
    const Probe& p = find_probe(report.probe);
    fmt::print("probe {}: {}; aims at {}\n", p.name, p.what, p.targets);
    if (!report.probe_note.empty()) fmt::print("{}\n", report.probe_note);
  }
  for (const std::string& note : report.notes) fmt::print("{}\n", note);
  if (!report.memory.empty()) fmt::print("memory: estimated peak {}\n", report.memory);
  if (asked != SimtOptions{})  // what a race finding was found under
    fmt::print(
        "simt: order {}, {} host thread(s){}{}{}{}\n", simt_order_text(o.simt), simt_threads(o.simt),
        o.simt.strict ? ", strict" : "",
        o.simt.race_check ? fmt::format(", race check over {} more schedule(s)", o.simt.race_check) : "",
        o.simt.racecheck ? ", shared-memory hazard checker" : "", o.simt.memcheck ? ", memcheck" : "");
  print_report(stdout, report, {args.only_failures, isatty(STDOUT_FILENO) != 0, args.all_rows});
  if (args.profile) print_launch_profile(stdout, report.launches);
  if (!o.trace_path.empty()) fmt::print("trace: {}\n", o.trace_path);
  return report;
}

// Every case of this shard in turn; a case that fails in any way does not stop the others.
int run_matrix(const RunArgs& args, const Policy& policy) {
  namespace fs = std::filesystem;
  const std::vector<CaseSpec> all = enumerate_cases(args.models, args.candidates, args.seeds, args.probes);
  ShardSpec shard;
  if (is_auto_shard(args.shard)) {
    std::string err;
    const auto s = resolve_auto_shard(args.shard, process_environment(), err);
    if (!s) throw InputError(err);
    fmt::print("--shard {}: shard {} from the {} ({})\n", args.shard, s->shard.str(), s->scheduler,
               s->evidence);
    shard = s->shard;
  } else if (!args.shard.empty()) {
    std::string err;
    const auto s = parse_shard(args.shard, err);
    if (!s) throw InputError(err);
    shard = *s;
  }
  if (!args.opt.trace_path.empty())
    throw InputError(fmt::format(
        "--trace names one file, but this run is a matrix of {} case(s){}: use --trace-dir DIR (one trace "
        "per case)",
        all.size(), args.shard.empty() ? "" : " split by --shard"));
  if (!args.trace_dir.empty()) {
    std::error_code ec;
    fs::create_directories(args.trace_dir, ec);
    if (ec || !fs::is_directory(args.trace_dir))
      throw InputError(fmt::format("--trace-dir {}: cannot create the directory: {}", args.trace_dir,
                                   ec ? ec.message() : "exists and is not a directory"));
  }
  const std::vector<CaseSpec> mine = select_shard(all, shard);
  if (mine.empty()) {
    fmt::print("shard {} selects no case: the matrix has only {} case(s); nothing to run\n", shard.str(),
               all.size());
    return kExitParity;
  }
  std::vector<CaseOutcome> outcomes;
  for (const CaseSpec& c : mine) {
    CaseOutcome out{c, shard.str()};
    out.command_line = single_case_command(args.argv, c);
    fmt::print("\n=== case {}/{} (shard {}): {} ===\n", c.index, c.of, shard.str(), c.key());
    RunOptions o = args.opt;
    o.model = c.model;
    o.candidate = c.candidate;
    o.seed = c.seed;
    o.probe = c.probe;
    o.case_info = {{"index", c.index},
                   {"of", c.of},
                   {"shard", shard.str()},
                   {"model", c.model},
                   {"seed", c.seed},
                   {"candidate", c.candidate},
                   {"command_line", out.command_line}};
    if (!args.trace_dir.empty()) {
      o.trace_path = (fs::path(args.trace_dir) / case_trace_name(c)).string();
      // Last night's file of a case that now stops before writing one must not pass for tonight's.
      std::error_code ec;
      fs::remove(o.trace_path, ec);
    }
    std::fflush(stdout);
    try {
      out.report = run_and_print(args, o, policy);
      out.exit_code = out.report->exit_code;
      if (!o.trace_path.empty()) out.trace = o.trace_path;
    } catch (const GateRefusal& e) {
      fmt::print(stderr, "{}\n", e.what());
      out.exit_code = kExitRefused;
      out.error = e.what();
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      out.exit_code = kExitUsage;
      out.error = e.full();
    } catch (const std::exception& e) {
      // Nothing a case meets should end here; if it does, it is that case's error, and the other
      // cases and the matrix's reports still come.
      fmt::print(stderr, "error: {}\n", e.what());
      out.exit_code = kExitUsage;
      out.error = e.what();
    }
    // A case stopped before any stage still leaves its trace (the runner's stopped-run stub).
    if (std::error_code ec;
        out.trace.empty() && !o.trace_path.empty() && fs::is_regular_file(o.trace_path, ec)) {
      out.trace = o.trace_path;
      fmt::print("trace: {}\n", o.trace_path);
    }
    std::fflush(stderr);
    outcomes.push_back(std::move(out));
  }
  fmt::print("\nshard {} ran {} of the matrix's {} case(s)\n", shard.str(), mine.size(), all.size());
  print_matrix_summary(stdout, outcomes);
  write_matrix_files(outcomes, args.report.files);
  return matrix_exit_code(outcomes);
}

}  // namespace

void add_run_command(CLI::App& app, const std::vector<std::string>& argv, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  args->argv = argv;
  for (const auto& a : argv) args->opt.command_line += (args->opt.command_line.empty() ? "" : " ") + a;
  CLI::App* run = app.add_subcommand("run", "Run a candidate against the reference and compare every stage");
  // Repeatable: several values make a matrix of cases (model x candidate x seed).
  run->add_option("--model,-m", args->models,
                  fmt::format("Model: synthetic:<preset>, a .gguf file, or a directory with config.json + "
                              "*.safetensors. Repeat for a matrix of models. Presets: {}",
                              fmt::join(ref::synthetic_presets(), ", ")))
      ->allow_extra_args(false)
      ->capture_default_str();
  run->add_option(
         "--candidate,-c", args->candidates,
         "Candidate to judge (see `driftscope candidates`), or a plugin: PATH.so (every candidate it "
         "registers) or PATH.so:NAME, or a Python candidate: py:FILE.py[:NAME] (docs/python.md), or "
         "dump:DIR[:MAPPING.yaml] (another engine's tensor dumps, docs/dumps.md). Repeat for a matrix of "
         "candidates")
      ->allow_extra_args(false)
      ->capture_default_str();
  run->add_option("--fill", args->fill,
                  "reference: stages the candidate's plan does not produce are computed by the reference "
                  "fill at the candidate's storage dtype and shown as `filled` (never judged); none: such a "
                  "candidate is refused (exit 3)")
      ->check(CLI::IsMember({"none", "reference"}))
      ->capture_default_str();
  run->add_option("--prompt-tokens", args->opt.prompt_tokens, "Tokens in the prefill step")
      ->capture_default_str();
  run->add_option(
      "--tokens", args->tokens,
      "The prompt's token ids, 1,5,9 or @FILE (ids separated by commas or whitespace), instead of "
      "--prompt-tokens seeded ones; an id outside the vocabulary is exit 2. A dump's own tokens win");
  run->add_option("--decode-steps", args->opt.decode_steps, "Incremental decode steps after the prefill")
      ->capture_default_str();
  run->add_option("--batch", args->opt.batch,
                  "N sequences fed to the candidate at once (prefill ragged, decode batched), each judged "
                  "against the reference run alone; or a batch description file (YAML: each sequence's "
                  "prompt, decode steps, start position, state slot, join step). docs/batches.md");
  run->add_option(
         "--batch-checks", args->opt.batch_checks,
         "With --batch: all, none, or invariance,leak. invariance: each batched step's outputs equal "
         "(bit for bit) the same sequence run alone; leak: perturbing one sequence's inputs moves no "
         "other sequence's outputs")
      ->capture_default_str();
  run->add_option(
      "--batch-prompts", args->opt.batch_prompts,
      "With --batch N: each sequence's prompt length, L1,L2,..,LN (default: --prompt-tokens each)");
  {
    std::string names;
    for (const Probe& p : probes()) names += fmt::format("\n  {}: {}", p.name, p.targets);
    run->add_option("--probe", args->probes,
                    fmt::format("An input pattern aimed at one class of kernel bug, or all (a case each; "
                                "docs/cli.md). Repeat for several:{}",
                                names))
        ->check([](const std::string& v) {
          if (v == "all") return std::string();
          try {
            (void)find_probe(v);
            return std::string();
          } catch (const InputError& e) {
            return std::string(e.what());
          }
        });
  }
  {
    std::string names;
    for (const NumericsProfile& p : numerics_profiles())
      names += fmt::format("\n  {}: {}", p.name, p.description);
    run->add_option(
           "--numerics", args->opt.numerics,
           fmt::format("How the candidate computes below its storage dtype, so the noise floors model "
                       "a correct engine of that kind (docs/policies.md): a profile, or key=value pairs "
                       "(accum, rope, attention, gelu, act-quant, kv-cache), e.g. hf-f32,kv-cache=f16. "
                       "Default: a dump mapping's numerics:, else f32 for f32 storage and one-rounding "
                       "below it. Profiles:{}",
                       names))
        ->check([](const std::string& v) {
          try {
            (void)parse_numerics(v);
            return std::string();
          } catch (const std::invalid_argument& e) {
            return std::string(e.what());
          }
        });
  }
  run->add_option("--local-check", args->opt.local_check,
                  "Chained mode: also recompute every stage by two honest engines of the numerics from the "
                  "candidate's own inputs, and hold the candidate to what they differ by (docs/policies.md, "
                  "\"The local check\"). auto: for an engine's dump (dump:DIR); on: for any candidate")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  run->add_option("--from-step", args->opt.from_step,
                  "Run the candidate, and judge it, from this model step on (0 the prefill, 1.. decode); the "
                  "steps before run on the reference only. Isolated mode only: a decode step at a late "
                  "position without the candidate's long prefill")
      ->capture_default_str();
  run->add_option("--gdn-variant", args->opt.gdn_variant,
                  "Fused GDN decode ops the plan requests, comma-separated: plain, inplace, ids, "
                  "conv-update, conv-update-ids. The capability gate refuses a candidate lacking one");
  run->add_option(
      "--baseline", args->opt.baseline,
      "Judge the candidate against this candidate instead of the oracle: both run every step on the same "
      "isolated inputs (the oracle's stages), and each stage is compared with the baseline's. Isolated mode "
      "only; meant for --policy fixtures/policies/strict.yaml (fused against unfused kernels)");
  run->add_option(
      "--baseline-gdn-variant", args->opt.baseline_gdn_variant,
      "The --gdn-variant of the --baseline (default plain): judge fused GDN ops against the plain ones");
  run->add_option("--seed", args->seeds,
                  "Seed of the synthetic weights and the prompt tokens. Repeat for a matrix of seeds")
      ->check([](const std::string& v) {
        return !v.empty() && v[0] == '-' ? fmt::format("seed {} is negative: seeds are 0 to 2^64 - 1", v)
                                         : std::string();
      })
      ->allow_extra_args(false)
      ->capture_default_str();
  run->add_option(
      "--shard", args->shard,
      "Run only shard i of N (0-based, e.g. 0/4) of the model x candidate x seed matrix: the cases "
      "k with k % N == i. For CI matrix jobs and Slurm array tasks. auto: i and N from the scheduler "
      "that started the job (a Slurm job array, SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT; a GitLab "
      "parallel job, CI_NODE_INDEX and CI_NODE_TOTAL); auto/N: N given, i from the scheduler (a "
      "Kubernetes Indexed Job, JOB_COMPLETION_INDEX); docs/nightly.md");
  run->add_option(
      "--trace-dir", args->trace_dir,
      "Matrix runs: write one trace per case here, named case-<k>-of-<M>.h5 (created if missing)");
  run->add_option("--widths", args->widths,
                  "odd: run each synthetic model's family at widths off every vector and tile multiple (its "
                  "-tails-tiny preset: hidden 90, ffn 170, heads of 18, vocab 300), where tail bugs show; "
                  "synthetic presets only. as-is: the model's own widths")
      ->check(CLI::IsMember({"as-is", "odd"}))
      ->capture_default_str();
  run->add_option("--layers", args->opt.layers,
                  "Run only the first N layers of the model (0: all; more than the model has: exit 2)")
      ->capture_default_str();
  run->add_option("--mode", args->mode,
                  "isolated: every candidate step gets the reference's inputs (local error); chained: the "
                  "candidate consumes its own outputs (accumulated error); both: record both")
      ->check(CLI::IsMember({"isolated", "chained", "both"}))
      ->capture_default_str();
  run->add_option("--trace,-o", args->opt.trace_path,
                  "Write the HDF5 trace here (a single case; a matrix uses --trace-dir)");
  run->add_option("--capture", args->capture,
                  "Which stage tensors the trace keeps: all, inputs (all, and every step's inputs, so that "
                  "replay works on any stage), failing (only failing stages), stats (none)")
      ->check(CLI::IsMember({"all", "inputs", "failing", "stats"}))
      ->capture_default_str();
  run->add_option("--capture-stages", args->opt.capture_stages,
                  "Keep tensors only of stages whose name matches this regex (summary rows are always kept)");
  run->add_option("--capture-layers", args->capture_layers,
                  "Keep tensors only of layers A:B (inclusive; model-level stages are always kept)");
  run->add_flag("--progress", args->progress,
                "Print where the run is every 10 s where stderr is no terminal (a terminal always shows it)");
  run->add_flag("--only-failures", args->only_failures,
                "List only failing rows (else a failing run also lists the passing rows before the first "
                "failure in its block)");
  run->add_flag(
      "--profile", args->profile,
      "After the table, the candidate's kernel launches per step and per layer, with their time "
      "(CPU wall time on simt, marked emulated; GPU time from CUPTI on cuda). Every run records them "
      "in the trace's /launches table");
  run->add_flag("--all", args->all_rows,
                "Print every row: passing ones, each inherited failure (else one line per layer), filled "
                "ones, and the values under every failure (else only the first failure's)");
  add_timeout_flag(run, args->opt.timeout_s);
  add_python_flag(run);
  run->add_option("--max-memory", args->opt.max_memory_text,
                  "Refuse (exit 2), before loading any weight, a run whose estimated peak memory (harness "
                  "and candidate process) exceeds SIZE: bytes, or K, M, G with powers of 1024 (e.g. 3G, "
                  "512M). Default: the MemAvailable of /proc/meminfo");
  add_simt_flags(run, args->opt.simt);
  run->add_flag("--fail-on-leak", args->opt.fail_on_leak,
                "Fail (exit 1) a run whose candidate steps allocated device memory (cudaMalloc, "
                "simt::malloc) they never freed by its end; without it each such allocation site is a "
                "warning ('leak: ...') and in the JSON report's `leaks`");
  run->add_flag("--sandbox", args->opt.sandbox,
                "Run every process of the candidate's code sandboxed: no network, writes only under a temp "
                "dir of the run's, no exec or non-AF_UNIX socket, rlimits; a forbidden call crashes the step "
                "naming it (docs/sandbox.md; verify's default)");
  run->add_flag(
      "!--no-isolate", args->opt.isolate_process,
      "Run the candidate in this process instead of a child (for gdb; a crash then kills the harness)");
  add_report_options(run, args->report);
  run->callback([args, run, &exit_code] {
    auto& o = args->opt;
    o.fill = args->fill == "reference";
    o.modes_given = run->count("--mode") > 0;
    args->simt_threads_given = run->count("--simt-threads") > 0;
    o.modes = args->mode == "both" ? std::vector<Mode>{Mode::isolated, Mode::chained}
                                   : std::vector<Mode>{*parse_mode(args->mode)};
    o.capture = args->capture == "all"       ? trace::Capture::all
                : args->capture == "inputs"  ? trace::Capture::inputs
                : args->capture == "failing" ? trace::Capture::failing
                                             : trace::Capture::stats;
    try {
      if (!o.max_memory_text.empty()) {
        o.max_memory = parse_memory_size(o.max_memory_text);
        if (!o.max_memory)
          throw InputError(fmt::format(
              "--max-memory {}: expected a size such as 3G, 512M or a number of bytes", o.max_memory_text));
      }
      if (run->count("--capture-layers") > 0 &&
          !parse_layer_range(args->capture_layers, o.capture_layer_min, o.capture_layer_max))
        throw InputError(fmt::format("--capture-layers {}: expected A:B or N", args->capture_layers));
      try {
        if (!o.capture_stages.empty()) (void)compile_stage_pattern(o.capture_stages);
      } catch (const std::invalid_argument& e) {
        throw InputError(fmt::format("--capture-stages: {}", e.what()));
      }
      // `--tokens ""` (an unset shell variable) is a prompt of no tokens, not "use the seeded one".
      if (run->count("--tokens") > 0) {
        o.tokens = parse_tokens_arg(args->tokens);
        o.prompt_tokens = int(o.tokens.size());
      }
      if (args->widths == "odd") args->models = with_odd_widths(args->models);
      const Policy policy = load_policy(args->report);
      // A plugin file without :NAME stands for every candidate it registers.
      std::vector<std::string> specs;
      for (const std::string& c : args->candidates) {
        try {
          for (std::string& e : expand_candidate_spec(c)) specs.push_back(std::move(e));
        } catch (const std::invalid_argument&) {
          // A plugin that cannot be opened, or whose opening crashes: the run of it says so, with
          // the stub trace and report files of any refusal (exit 2) or crash (exit 4).
          specs.push_back(c);
        } catch (const CandidateCrash&) {
          specs.push_back(c);
        }
      }
      args->candidates = specs;
      if (std::find(args->probes.begin(), args->probes.end(), "all") != args->probes.end()) {
        args->probes.clear();
        for (const Probe& p : probes()) args->probes.emplace_back(p.name);
      }
      if (args->models.size() * args->candidates.size() * args->seeds.size() * args->probes.size() > 1 ||
          !args->shard.empty() || !args->trace_dir.empty()) {
        exit_code = run_matrix(*args, policy);
        return;
      }
      o.model = args->models.front();
      o.candidate = args->candidates.front();
      o.seed = args->seeds.front();
      o.probe = args->probes.front();
      const RunReport report = [&] {
        try {
          return run_and_print(*args, o, policy);
        } catch (const std::runtime_error& e) {
          // Refused or bad input: the runner left a trace that records why (trace_stub.h), and a
          // CI job asking for --junit/--json/--markdown gets them saying so, not no file at all.
          if (std::error_code ec;
              !o.trace_path.empty() && std::filesystem::is_regular_file(o.trace_path, ec)) {
            const auto* write = dynamic_cast<const TraceWriteError*>(&e);
            fmt::print("trace: {} ({})\n", o.trace_path,
                       !write ? "records why the run stopped"
                       : write->recorded
                           ? "keeps the stages written before the write failed, and says it failed"
                           : "keeps the stages written before the write failed; reads as INCOMPLETE");
          }
          const bool refused = dynamic_cast<const GateRefusal*>(&e) != nullptr;
          if (refused || dynamic_cast<const InputError*>(&e)) {
            const auto* input = dynamic_cast<const InputError*>(&e);
            const RunReport stopped =
                stopped_report(o.model, o.candidate, policy.name(), refused ? kExitRefused : kExitUsage,
                               input ? input->full() : std::string(e.what()));
            try {
              write_report_files(stopped, args->report.files);
            } catch (const InputError& file_error) {
              fmt::print(stderr, "error: {}\n", file_error.what());
            }
          }
          throw;
        }
      }();
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
