// driftscope check: the battery an expert would run on a candidate, in one command. Each part is
// an ordinary `run` (its command line is printed, to rerun it alone); the verdict names the first
// failing stage of each part.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "bare_candidate.h"
#include "scratch_dir.h"
#include "check_battery.h"
#include "commands.h"
#include "install_paths.h"
#include "cpu/cpu_candidate.h"
#include "console.h"
#include "matrix.h"
#include "probes.h"
#include "registry.h"
#include "report_files.h"
#include "report_options.h"
#include "runner.h"
#include "simt_flags.h"
#include "synthetic.h"
#include "python_flag.h"
#include "timeout_flag.h"

namespace ds::cli {

namespace battery {

namespace {

bool is_dump(const std::string& candidate) { return candidate.rfind("dump:", 0) == 0; }

std::string where(const StageResult& r) {
  return fmt::format("{} of layer {}, step {} ({})", r.key.stage, r.key.layer, r.key.step, mode_name(r.mode));
}

}  // namespace

// Our fused kernels (and their mutants) and plugins, which build on the SIMT runtime.
bool runs_on_simt(const std::string& candidate) {
  if (candidate.rfind("simt", 0) == 0 || candidate.find(".so") != std::string::npos) return true;
  if (candidate.rfind("mutant:", 0) != 0) return false;
  // A mutant is a kernel mutant unless it is one of cpu-f16's planted variants.
  const auto& cpu = cpu::planted_variants();
  return std::none_of(cpu.begin(), cpu.end(), [&](const cpu::CpuVariant& v) { return candidate == v.name; });
}

RunOptions common_options(const CheckArgs& a) {
  RunOptions o;
  o.model = a.model;
  o.candidate = a.candidate;
  o.seed = a.seed;
  o.layers = a.layers;
  o.decode_steps = a.decode_steps;
  o.fill = a.fill == "reference";
  o.numerics = a.numerics;
  o.timeout_s = a.timeout_s;
  o.sandbox = a.sandbox;
  if (a.meter) o.on_event = a.meter->observer();
  return o;
}

void begin_progress(ProgressMeter* meter, std::string label, const RunOptions& o) {
  if (!meter) return;
  int layers = 0;
  try {
    layers = load_config_spec(o.model, o.layers).n_layers;
  } catch (const InputError&) {
    // The run itself names the bad model; the meter shows a clock without layers.
  }
  // A batch of N sequences runs the reference's layers once per sequence (a batch file: unknown here).
  const bool counted =
      !o.batch.empty() && o.batch.size() <= 4 && o.batch.find_first_not_of("0123456789") == std::string::npos;
  if (counted) layers *= std::stoi(o.batch);
  meter->begin(std::move(label), layers, o.decode_steps + 1);
}

namespace {

// `part` runs, whole, the preset `preset_of` names for the checked synthetic model's family, or is
// skipped with the reason: a model file (`file_reason`), a dump, a family that has none.
void run_on_family_preset(Part& part, const CheckArgs& a, std::string (*preset_of)(std::string_view),
                          std::string_view file_reason) {
  if (is_dump(a.candidate)) {
    part.skip_reason = "a dump is one engine run at the model's own widths";
  } else if (a.model.rfind("synthetic:", 0) != 0) {
    part.skip_reason = std::string(file_reason);
  } else {
    try {
      part.opt.model = "synthetic:" + preset_of(a.model.substr(10));
      part.opt.layers = 0;
    } catch (const std::invalid_argument& e) {
      part.skip_reason = e.what();
    }
  }
}

}  // namespace

std::vector<Part> plan_parts(const CheckArgs& a) {
  RunOptions base = common_options(a);
  // A dump is the engine's own chain of outputs: it has no isolated lane.
  base.modes = is_dump(a.candidate) ? std::vector<Mode>{Mode::chained}
                                    : std::vector<Mode>{Mode::isolated, Mode::chained};
  std::vector<Part> parts;
  // First: a bad store corrupts whatever runs after it, so every later part may fail for it, far
  // from its line. One step of each size (the prompt, then one token): a grid sized for many tokens
  // meets its missing bounds guard at the one-token step.
  Part memory{"memory errors",
              "loads and stores outside their buffer or shared-memory array, after a free, misaligned or "
              "through a null pointer, and bad frees (kernels built CHECKED: every access, with its "
              "file:line)",
              base, memcheck_blind_spot(a.candidate)};
  memory.opt.simt.memcheck = true;
  memory.memory_only = true;
  memory.opt.modes = {Mode::isolated};
  memory.opt.decode_steps = std::min(a.decode_steps, 1);
  parts.push_back(std::move(memory));
  parts.push_back({"both modes",
                   "every stage against the oracle, isolated and chained, and drift across layers", base,
                   ""});
  std::optional<ModelConfig> cfg;  // to tell which probes have something to aim at
  try {
    cfg = load_config_spec(a.model, a.layers);
  } catch (const InputError&) {
    // The parts report a model that does not load, each as bad input.
  }
  for (const Probe& p : probes()) {
    Part part{fmt::format("probe {}", p.name), std::string(p.targets), base, ""};
    part.opt.probe = std::string(p.name);
    if (is_dump(a.candidate))
      part.skip_reason = "a dump replays its engine's own prompt; a probe needs new inputs";
    else if (auto why = cfg ? probe_skip_reason(p, *cfg) : std::nullopt)
      part.skip_reason = *why;
    parts.push_back(std::move(part));
  }
  // Under memcheck where the candidate runs on SIMT: a tail is where a vector load or a grid without
  // its guard reaches past the buffer, which the model's own widths (multiples of 8) never show.
  Part tails{"odd widths",
             "tails after the last full vector or tile (widths off every multiple; kernels built CHECKED: "
             "an access past the buffer named at its line)",
             base, ""};
  tails.opt.simt.memcheck = runs_on_simt(a.candidate);
  run_on_family_preset(tails, a, ref::synthetic_tails_preset,
                       "a model file has the widths it has (run its family's -tails-tiny preset)");
  parts.push_back(std::move(tails));
  // Paths a kernel takes only at real sizes (a split-K reduction past some width, a wider tile,
  // expert ids past 64): the family's one-layer preset at real widths, which no tiny preset reaches,
  // at one prompt and one decode step.
  Part wide{"real widths",
            "paths taken only at real sizes: hidden 2304, ffn 8192 (the columns of llama3.2-1b's down), 128 "
            "or 512 experts on MoE, one layer, under memcheck and two schedule reruns",
            base, ""};
  wide.opt.modes = {Mode::isolated};
  wide.opt.decode_steps = std::min(a.decode_steps, 1);
  // Memcheck and two schedule reruns, whose first interleaves threads and blocks at every access of
  // kernels built CHECKED (a split-K lost update shows as a changed value). Not the hazard checker:
  // kernels built without the CHECKED flavour (the kernel mutants, a plugin without its twin) get
  // its page-fault form, minutes at these widths.
  wide.opt.simt.memcheck = runs_on_simt(a.candidate);
  wide.opt.simt.race_check = runs_on_simt(a.candidate) ? 2 : 0;
  if (a.model.starts_with("synthetic:") && !a.model.ends_with("-tiny"))
    wide.skip_reason = fmt::format("{} is not a tiny preset: the other parts ran its own widths", a.model);
  else
    run_on_family_preset(wide, a, ref::synthetic_wide_preset,
                         "a model file has the widths it has, which the other parts ran");
  parts.push_back(std::move(wide));
  // Three sequences of ragged prompts at once: a kernel indexing rows or positions by its batch (a
  // neighbour's row, a shared offset) is right alone and wrong here, and the batch checks compare
  // each sequence's outputs with its run alone (invariance) and under a neighbour's other inputs.
  Part batches{"batches",
               "three sequences at once, prompts of 4, 1 and 7 tokens: each judged against the reference, "
               "equal to its run alone, untouched by its neighbours' inputs",
               base, ""};
  batches.opt.batch = "3";
  batches.opt.batch_prompts = "4,1,7";
  if (is_dump(a.candidate)) batches.skip_reason = "a dump is one engine run of one sequence";
  parts.push_back(std::move(batches));
  // On a hybrid: the serving engines' fused GDN ops, whose decode calls gather each sequence's state
  // by slot id. A sequence leaves, so another's state moves to its slot, and one joins with none (a
  // reset): an op that reads its neighbour's slot or ignores the ids is right in every other part.
  const bool hybrid = cfg && [&] {
    for (int l = 0; l < cfg->n_layers; ++l)
      if (cfg->block_kind(l) == BlockKind::gdn) return true;
    return false;
  }();
  if (hybrid) {
    Part slots{"batches, GDN state slots",
               "fused GDN ops that gather each sequence's state by slot id (--gdn-variant ids, "
               "conv-update-ids): a sequence's state moved to another slot, a sequence joining with none; "
               "each judged, equal to its run alone, untouched by its neighbours",
               base, ""};
    slots.opt.batch = find_shipped_yaml("batches", "moved-and-reset", "--batch");
    slots.opt.gdn_variant = "ids,conv-update-ids";
    slots.skip_if_refused = true;
    if (is_dump(a.candidate)) slots.skip_reason = "a dump is one engine run of one sequence";
    parts.push_back(std::move(slots));
  }
  Part races{"schedule races", "results that depend on the order threads and blocks run in", base, ""};
  races.opt.simt.race_check = 2;
  Part hazards{
      "shared-memory hazards",
      "reads and writes of shared memory without a barrier between; global memory two blocks write "
      "without an atomic (kernels built CHECKED, simt's among them: every access, both lines, global "
      "reads too)",
      base, ""};
  hazards.opt.simt.racecheck = true;
  hazards.opt.modes = {Mode::isolated};
  hazards.opt.decode_steps = std::min(a.decode_steps, 1);
  if (!runs_on_simt(a.candidate)) {
    races.skip_reason = hazards.skip_reason = fmt::format(
        "{} does not run on the SIMT runtime, whose schedules and memory these parts inspect", a.candidate);
  }
  parts.push_back(std::move(races));
  parts.push_back(std::move(hazards));
  for (const std::string& name : a.skip_parts) {
    const auto it = std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.name == name; });
    if (it == parts.end()) {
      std::vector<std::string> names;
      for (const Part& p : parts) names.push_back(fmt::format("'{}'", p.name));
      throw InputError(fmt::format("--skip-part '{}': the battery has no such part; its parts here: {}", name,
                                   fmt::join(names, ", ")));
    }
    if (it->skip_reason.empty()) it->skip_reason = kSkippedByFlag;
  }
  return parts;
}

std::vector<std::string> rerun_argv(const RunOptions& o, const std::string& policy) {
  std::vector<std::string> argv = {"driftscope",     "run",
                                   "--model",        o.model,
                                   "--candidate",    o.candidate,
                                   "--seed",         std::to_string(o.seed),
                                   "--decode-steps", std::to_string(o.decode_steps)};
  const auto add = [&argv](std::initializer_list<std::string> args) { argv.insert(argv.end(), args); };
  if (o.layers > 0) add({"--layers", std::to_string(o.layers)});
  if (o.fill) add({"--fill", "reference"});
  if (!o.numerics.empty()) add({"--numerics", o.numerics});
  add({"--mode", o.modes.size() == 2 ? std::string("both") : std::string(mode_name(o.modes.front()))});
  if (!o.probe.empty()) add({"--probe", o.probe});
  if (!o.batch.empty()) add({"--batch", o.batch});
  if (!o.batch_prompts.empty()) add({"--batch-prompts", o.batch_prompts});
  if (!o.gdn_variant.empty()) add({"--gdn-variant", o.gdn_variant});
  if (o.simt.race_check > 0) add({"--race-check", std::to_string(o.simt.race_check)});
  if (o.simt.racecheck) add({"--simt-racecheck"});
  if (o.simt.memcheck) add({"--simt-memcheck"});
  if (o.timeout_s != RunOptions{}.timeout_s) add({"--timeout", fmt::format("{:g}", o.timeout_s)});
  if (o.sandbox) add({"--sandbox"});
  if (!policy.empty()) add({"--policy", policy});
  return argv;
}

std::string rerun_command(const Part& part, const std::string& policy) {
  std::string out;
  for (const std::string& a : rerun_argv(part.opt, policy)) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

PartOutcome run_part(const Part& part, const Policy& policy, const std::string& trace_dir, int index) {
  PartOutcome out{&part};
  std::string missing_ops;  // what a refusing gate found the candidate lacks
  RunOptions o = part.opt;
  if (!trace_dir.empty())
    o.trace_path = (std::filesystem::path(trace_dir) / fmt::format("part-{}.h5", index)).string();
  try {
    const RunReport r = run_parity(o, policy);
    out.exit_code = r.exit_code;
    out.first_failure = r.first_failure;
    if (part.memory_only && r.memcheck_blind && r.exit_code == kExitParity) {
      out.not_judged = r.memcheck_note.empty() ? "memcheck checked no launch" : r.memcheck_note;
      out.verdict = "skipped: " + out.not_judged;
      return out;
    }
    // The memory part judges memory: a stage that is merely wrong fails it too (it is a whole run),
    // and the part that runs first would then name every parity bug; the other parts report those.
    if (part.memory_only && r.exit_code == kExitFailure) {
      const auto memory = std::find_if(r.results.begin(), r.results.end(),
                                       [](const StageResult& s) { return s.status == Status::memory; });
      if (memory == r.results.end()) {
        out.exit_code = kExitParity;
        out.first_failure.reset();
        out.verdict = fmt::format(
            "no memory error in {} launches ({} fails for other reasons, which the other "
            "parts report)",
            r.launches.size(), r.first_failure ? where(*r.first_failure) : std::string("the run"));
        if (!r.leak_summary.empty()) out.verdict += fmt::format("; warning: {}", r.leak_summary);
        return out;
      }
      out.first_failure = *memory;
    }
    if (r.exit_code == kExitParity)
      out.verdict = r.verdict;
    else if (out.first_failure)
      out.verdict = fmt::format("{}: {}", where(*out.first_failure), failure_why(*out.first_failure));
    else if (r.drift_failed)
      out.verdict = r.drift;
    else if (!r.crash.empty())
      out.verdict = r.crash;
    else
      out.verdict = r.verdict;
    // A crash after an earlier stage failed: the verdict names that stage, and the crash too, which
    // is what made the part CRASHED.
    if (r.exit_code == kExitCrashed && out.first_failure && out.first_failure->status != Status::crashed &&
        !r.crash.empty())
      out.verdict += fmt::format("; then {}", r.crash);
    if (part.memory_only && !r.leak_summary.empty() && !r.leak_failed)
      out.verdict += fmt::format("; warning: {}", r.leak_summary);
  } catch (const GateRefusal& e) {
    out.exit_code = kExitRefused;
    out.verdict = e.what();
    missing_ops = e.missing_ops;
  } catch (const InputError& e) {
    out.exit_code = kExitUsage;
    out.verdict = e.what();
  }
  if (part.skip_if_refused && out.exit_code == kExitRefused) {
    out.exit_code = kExitParity;
    out.first_failure.reset();
    out.not_judged = fmt::format("the candidate lacks what this part runs ({})",
                                 missing_ops.empty() ? first_line(out.verdict) : "Missing: " + missing_ops);
    out.verdict = "skipped: " + out.not_judged;
  }
  return out;
}

std::string crash_after_memory_error(const PartOutcome& memory) {
  if (!memory.part->memory_only || !memory.first_failure || memory.first_failure->status != Status::memory)
    return "";
  return fmt::format("likely the memory error at {} (a bad store corrupts memory that code after it uses)",
                     where(*memory.first_failure));
}

// The battery's exit code: a crash, else a failure, else a refusal, else bad input, else a pass.
int worst(const std::vector<PartOutcome>& outs) {
  int code = kExitParity;
  const auto rank = [](int c) {
    switch (c) {
      case kExitCrashed: return 4;
      case kExitFailure: return 3;
      case kExitRefused: return 2;
      case kExitUsage: return 1;
      default: return 0;
    }
  };
  for (const PartOutcome& o : outs)
    if (rank(o.exit_code) > rank(code)) code = o.exit_code;
  return code;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string skipped_by_flag_note(const std::vector<Part>& parts) {
  const auto n =
      std::count_if(parts.begin(), parts.end(), [](const Part& p) { return p.skip_reason == kSkippedByFlag; });
  return n == 0 ? std::string() : fmt::format("; {} skipped by --skip-part", n);
}

}  // namespace battery

using namespace battery;

void add_check_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* check = app.add_subcommand(
      "check",
      "Run the battery an expert would on a candidate: memory errors, both modes with drift, every probe, "
      "odd widths, real widths, batches, schedule races and shared-memory hazards; one verdict naming the "
      "first failing stage of each part");
  check->add_option("--model", args->model, "Model: a synthetic preset, GGUF file or HF directory")
      ->capture_default_str();
  check
      ->add_option(
          "--candidate", args->candidate,
          "The candidate to check (built-in name, PATH.so[:NAME], or a kernel FILE.cu with --stage-map)")
      ->capture_default_str();
  auto stage_map = std::make_shared<std::string>();
  check->add_option(
      "--stage-map", *stage_map,
      "With --candidate FILE.cu: a YAML file with `kind` and `entry` (docs/verify.md); the .cu is "
      "built in --trace-dir DIR/candidate, or a temporary directory");
  check->add_option("--seed", args->seed, "Seed of the synthetic weights and the prompt")
      ->capture_default_str();
  check->add_option("--layers", args->layers, "Only the first N layers (0: all); real-shape presets want 2")
      ->capture_default_str();
  check->add_option("--decode-steps", args->decode_steps, "Decode steps of every part")
      ->capture_default_str();
  check->add_option("--fill", args->fill, "reference: stages the candidate does not produce are filled")
      ->check(CLI::IsMember({"none", "reference"}))
      ->capture_default_str();
  check->add_option("--numerics", args->numerics,
                    "How the candidate computes (run --help, docs/policies.md)");
  add_timeout_flag(check, args->timeout_s);
  add_python_flag(check);
  check->add_flag("--sandbox", args->sandbox,
                  "Run every process of the candidate's code sandboxed: no network, writes only under a temp "
                  "dir, no exec or non-AF_UNIX socket, rlimits (docs/sandbox.md; verify's default)");
  check->add_flag("--fail-fast", args->fail_fast,
                  "Stop at the first part that does not pass: the rest are NOT RUN (never a pass), and the "
                  "verdict is that part's");
  check->add_option("--skip-part", args->skip_parts,
                    "A part not to run, named as the battery lists it (repeatable; e.g. \"real widths\" where "
                    "another run already ran it): SKIPPED, never a pass, and counted in the verdict line");
  check->add_option("--trace-dir", args->trace_dir, "Write each part's trace here as part-<k>.h5");
  check->add_option(
      "--policy", args->report.policy,
      "A tolerance policy file or installed name (docs/policies.md); default: the built-in one");
  check->add_option("--json", args->json, "Write the battery's verdict, part by part, as JSON");
  check->add_flag("--progress", args->progress,
                  "Print where the battery is every 10 s where stderr is no terminal (a terminal always "
                  "shows it)");
  check->callback([args, stage_map, check, &exit_code] {
    remove_stale_scratch_dirs();
    try {
      if (!args->trace_dir.empty()) std::filesystem::create_directories(args->trace_dir);
      const Policy policy = load_policy(args->report);
      // A kernel file is built into a plugin first, which the parts then run (docs/verify.md).
      const std::string candidate = args->candidate;
      const std::optional<StageMap> map = stage_map_for(candidate, *stage_map);
      if (map) model_for_kernel_file(candidate, *map, args->model, check->count("--model") > 0);
      (void)load_config_spec(args->model, args->layers);  // a model that does not load: once, not per part
      std::optional<ScratchDir> build_dir;
      std::optional<BareCandidate> bare;
      if (map) {
        default_fill_for_kernel_file(candidate, *map, args->fill, check->count("--fill") > 0);
        build_dir.emplace(args->trace_dir, "driftscope-cu");
        bare = build_bare_candidate(candidate, *map, build_dir->path(), build_dir->kept());
        args->candidate = bare->plugin;
        if (!build_dir->kept())
          fmt::print(
              "the plugin built from {} is removed at the end (--trace-dir DIR keeps it in DIR/candidate)\n",
              candidate);
      }
      // Where the battery is: every part's run tells the meter its layers (common_options).
      std::optional<ProgressMeter> meter;
      if (const auto style = ProgressMeter::style_for(args->progress); style != ProgressMeter::Style::off) {
        meter.emplace(style, stderr);
        args->meter = &*meter;
      }
      const std::vector<Part> parts = plan_parts(*args);
      const std::string& policy_arg = args->report.policy;
      fmt::print(
          "driftscope check: {} vs {}, seed {}, {} decode steps{}: {} parts\n", args->model, candidate,
          args->seed, args->decode_steps,
          check->count("--decode-steps") > 0
              ? ""
              : fmt::format(" (check's default; verify's is {}, as it reruns the candidate for its own "
                            "checks)",
                            kVerifyDecodeSteps),
          parts.size());
      std::fflush(stdout);  // the parts take minutes: what runs is said first, even into a pipe
      std::vector<PartOutcome> outs;
      std::string stopped_at;  // --fail-fast: the part that did not pass
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const Part& p = parts[i];
        if (!stopped_at.empty()) {
          PartOutcome o{&p, kExitParity};
          o.not_judged = fmt::format("not run: --fail-fast stopped at {}", stopped_at);
          o.verdict = o.not_judged;
          outs.push_back(std::move(o));
          fmt::print("  [{:>2}/{}] {:<26} NOT RUN  --fail-fast stopped at {}\n", i + 1, parts.size(), p.name,
                     stopped_at);
          continue;
        }
        if (!p.skip_reason.empty()) {
          outs.push_back({&p, kExitParity, "skipped: " + p.skip_reason, std::nullopt});
          fmt::print("  [{:>2}/{}] {:<26} SKIPPED  {}\n", i + 1, parts.size(), p.name, p.skip_reason);
          continue;
        }
        begin_progress(args->meter, fmt::format("[{}/{}] {}", i + 1, parts.size(), p.name), p.opt);
        outs.push_back(run_part(p, policy, args->trace_dir, int(i)));
        if (meter) meter->clear();
        if (!outs.back().not_judged.empty()) {
          fmt::print("  [{:>2}/{}] {:<26} SKIPPED  {}\n", i + 1, parts.size(), p.name,
                     outs.back().not_judged);
          continue;
        }
        fmt::print("  [{:>2}/{}] {:<26} {:<8} {}\n", i + 1, parts.size(), p.name,
                   exit_word(outs.back().exit_code), first_line(outs.back().verdict));
        if (outs.back().exit_code != kExitParity)
          fmt::print("          rerun: {}\n", rerun_command(p, policy_arg));
        if (const std::string cause = crash_after_memory_error(outs.front());
            outs.back().exit_code == kExitCrashed && !cause.empty())
          fmt::print("          cause: {}\n", cause);
        if (args->fail_fast && outs.back().exit_code != kExitParity)
          stopped_at = fmt::format("[{}/{}] {}", i + 1, parts.size(), p.name);
      }
      exit_code = worst(outs);
      int failed = 0;
      std::string first;
      for (const PartOutcome& o : outs)
        if (o.exit_code != kExitParity) {
          if (++failed == 1) first = fmt::format(" (first: {}: {})", o.part->name, first_line(o.verdict));
        }
      const auto not_run = std::count_if(outs.begin(), outs.end(), [](const PartOutcome& o) {
        return o.not_judged.starts_with("not run: --fail-fast");
      });
      fmt::print("CHECK {}: {} of {} parts {}{}{}{}\n", exit_word(exit_code), failed, outs.size(),
                 failed ? "did not pass" : "failed", first,
                 not_run > 0 ? fmt::format("; {} not run (--fail-fast)", not_run) : std::string(),
                 skipped_by_flag_note(parts));
      if (!args->json.empty()) {
        nlohmann::json j = {
            {"model", args->model},   {"candidate", candidate},          {"seed", args->seed},
            {"exit_code", exit_code}, {"verdict", exit_word(exit_code)}, {"parts", nlohmann::json::array()}};
        if (bare) {
          j["stage_map"] = *stage_map;
          j["candidate_build"] = candidate_build_json(*bare, build_dir->kept());
        }
        for (const PartOutcome& o : outs)
          j["parts"].push_back({{"name", o.part->name},
                                {"aims_at", o.part->aim},
                                {"command", rerun_command(*o.part, policy_arg)},
                                {"skipped", o.skipped()},
                                {"exit_code", o.exit_code},
                                {"verdict", o.verdict}});
        write_text(args->json, j.dump(2) + "\n");
      }
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
