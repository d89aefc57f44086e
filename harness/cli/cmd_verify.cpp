// driftscope verify: one verdict for an automated loop that accepts kernels nobody reviewed. It
// runs the `check` battery, then the candidate under two memory poisons (an output that differs
// read memory nothing wrote) and on other inputs, and looks in those traces for the cheats public
// kernel benchmarks were passed by: outputs that ignore their inputs, outputs kept from an earlier
// call, an input handed back, an error the size of a lower precision than the declared one.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bare_candidate.h"
#include "check_battery.h"
#include "commands.h"
#include "report_files.h"
#include "report_options.h"
#include "runner.h"
#include "scaffold_files.h"
#include "scratch_dir.h"
#include "simt/simt_common.h"
#include "python_flag.h"
#include "timeout_flag.h"
#include "verify_findings.h"

namespace ds::cli {

namespace {

using battery::CheckArgs;
using battery::common_options;
using verify::Finding;

struct VerifyArgs {
  CheckArgs check;
  std::string work_dir, json;
  std::string stage_map;  // with --candidate FILE.cu
  bool keep = false;
  std::vector<std::string> checks;  // empty: all
};

// The checks verify adds to the battery, in the order they run.
struct CheckInfo {
  const char* name;
  const char* aim;
};
constexpr CheckInfo kChecks[] = {
    {"check",
     "the `check` battery: memory errors, both modes, probes, odd widths, real widths, batches, schedule "
     "races, shared-memory hazards"},
    {"poison", "reads of memory nothing wrote: device and shared memory under two poisons"},
    {"perturb", "outputs that do not follow their inputs: a rerun on other prompt tokens"},
    {"cached", "outputs kept from an earlier call of the same stage"},
    {"returns-input", "an input handed back as the output"},
    {"precision", "an error the size of a lower precision than the declared storage dtype"},
};

// The kind of finding a failing part of the battery is. Every part is a whole run, so a stage that
// is plainly wrong fails them all: only the schedule and hazard parts' own status (`race`) makes
// them a race, and a `memory` status (the memory part's, odd widths' memcheck) a memory error; otherwise what
// failed is parity, which the first part already reported.
std::string part_kind(const std::string& part, int exit_code, const std::optional<StageResult>& first) {
  if (exit_code == kExitCrashed) return "crash";
  if (first && first->status == Status::memory) return "memory";  // the odd widths' memcheck too
  const bool race = first && first->status == Status::race;
  if (part == "schedule races") return race ? "race" : "parity";
  if (part == "shared-memory hazards") return race ? "hazard" : "parity";
  if (part == "memory errors") return first && first->status == Status::memory ? "memory" : "parity";
  if (part.rfind("probe ", 0) == 0) return "probe";
  if (part == "odd widths") return "tail";
  if (part == "real widths") return race ? "race" : "size";
  if (part.rfind("batches", 0) == 0) return "batch";
  return "parity";
}

struct Outcome {
  std::vector<Finding> findings;
  nlohmann::json checks = nlohmann::json::array();
  nlohmann::json parts = nlohmann::json::array();
  bool refused = false, crashed = false;
  bool bad_input = false;      // a part's run was bad input (exit 2), not refused by a gate
  std::string refusal;         // its first line (the JSON's "refusal")
  std::string refusal_report;  // the whole report, with what to do about it, printed once
  std::string skipped_note;    // "; N skipped by --skip-part", or ""
};

// One run of the candidate for the new checks: isolated (a dump: chained), every step's inputs kept.
struct TracedRun {
  RunReport report;
  std::unique_ptr<trace::TraceReader> trace;
};

TracedRun traced_run(const CheckArgs& a, Mode mode, unsigned poison, const std::vector<int>& tokens,
                     const std::string& path, const Policy& policy, std::uint64_t poison_site = 0) {
  RunOptions o = common_options(a);
  o.modes = {mode};
  o.tokens = tokens;
  if (!tokens.empty()) o.prompt_tokens = int(tokens.size());
  o.capture = trace::Capture::inputs;
  o.trace_path = path;
  o.simt.poison = poison;
  o.simt.poison_site = poison_site;
  TracedRun r;
  r.report = run_parity(o, policy);
  if (r.report.exit_code == kExitRefused) throw GateRefusal(r.report.verdict);
  if (r.report.exit_code == kExitUsage) throw InputError(r.report.verdict);
  try {
    r.trace = std::make_unique<trace::TraceReader>(path);
  } catch (const trace::TraceError& e) {
    throw InputError(e.what());
  }
  return r;
}

// The source lines behind poison findings: one more run, under the hazard checker and the NaN
// poison, whose kernels built CHECKED (the simt candidate's checked module, a plugin built from a
// `_checked` kernel library) name every read of shared memory no thread of the block had written
// and every read of global memory that still holds the poison. Each finding gets the reads of its
// stage's launches (`reads`, `read_lines`), or `reads_note` saying why none.
void add_uninit_lines(const CheckArgs& a, Mode mode, const Policy& policy, std::vector<Finding>& found) {
  if (found.empty()) return;
  RunOptions o = common_options(a);
  o.modes = {mode};
  o.simt.racecheck = true;
  o.simt.poison = SimtOptions::kPoisonNan;  // what tells the checker which global bytes nothing wrote
  std::string why;
  RunReport r;
  try {
    r = run_parity(o, policy);
    if (!r.crash.empty()) why = "the run under the hazard checker crashed: " + battery::first_line(r.crash);
  } catch (const std::exception& e) {
    why = battery::first_line(e.what());
  }
  for (Finding& f : found) {
    std::vector<std::string> reads, lines;
    for (const StepLaunch& l : r.launches) {
      if (l.launch.uninit.empty() || !verify::made_by(l, f.step, f.layer, f.mode, f.stage)) continue;
      for (const std::string& read : l.launch.uninit) {
        if (read.starts_with(simt::racecheck_note)) continue;  // a benign hazard the checker noted, no read
        if (reads.size() < 4) reads.push_back(read);
        // "... read at FILE:LINE [block (x,y,z)]": the line of the read.
        if (const std::size_t at = read.rfind(" read at "); at != std::string::npos) {
          const std::string line = read.substr(at + 9, read.find(" [", at) - at - 9);
          if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
        }
      }
    }
    if (!reads.empty()) {
      f.evidence["reads"] = reads;
      f.evidence["read_lines"] = lines;
    } else {
      f.evidence["reads_note"] =
          !why.empty()
              ? why
              : "the hazard checker named no read of unwritten memory at this call: the kernels are not "
                "built CHECKED, or the read is of memory it does not watch or of a local declared without "
                "an initializer, which lives in a register (docs/verify.md)";
    }
  }
}

// The sites of poisoned locals a finding's stage reached: the notes of its launches in `launches`
// ("local `x` declared without an initializer at FILE:LINE").
std::vector<std::string> local_sites(const Finding& f, const std::vector<StepLaunch>& launches) {
  std::vector<std::string> sites;
  for (const StepLaunch& l : launches) {
    if (!verify::made_by(l, f.step, f.layer, f.mode, f.stage)) continue;
    for (const std::string& m : l.launch.local_sites)
      if (std::find(sites.begin(), sites.end(), m) == sites.end()) sites.push_back(m);
  }
  return sites;
}

// The locals behind poison findings. A local lives in a register, where no checker sees its reads,
// so each declaration without an initializer that a finding's stage reached under the poison is
// singled out in one more run: its locals start as the finite poison, all else as run A's NaN. A
// site whose run changes the stage's output is a local the stage read before writing it
// (`local_reads`, `local_lines`); at most kMaxSites sites over all findings.
void add_local_lines(const CheckArgs& a, Mode mode, const Policy& policy, const ScratchDir& dir,
                     const TracedRun& run_a, std::vector<Finding>& found) {
  constexpr std::size_t kMaxSites = 8;
  std::map<std::string, std::set<std::string>> changed;  // site -> the stages its run changed
  for (Finding& f : found) {
    std::vector<std::string> reads, lines;
    for (const std::string& site : local_sites(f, run_a.report.launches)) {
      const std::string file_line = site.substr(site.rfind(" at ") + 4);
      if (!changed.contains(site)) {
        if (changed.size() == kMaxSites) break;
        std::set<std::string>& stages = changed[site];
        const TracedRun single = traced_run(a, mode, SimtOptions::kPoisonNan, {},
                                            dir.file(fmt::format("poison-site-{}.h5", changed.size())),
                                            policy, simt::poison_site_id(file_line));
        if (single.report.crash.empty())
          for (const Finding& m :
               verify::poison_findings(*run_a.trace, *single.trace, run_a.report.launches, mode))
            stages.insert(m.stage);
      }
      if (changed[site].contains(f.stage)) {
        reads.push_back(site + ", read before it is written");
        lines.push_back(file_line);
      }
    }
    if (lines.empty()) continue;
    f.evidence["local_reads"] = reads;
    f.evidence["local_lines"] = lines;
    f.evidence.erase("reads_note");
  }
}

Finding crash_finding(const std::string& check, const RunReport& r) {
  Finding f;
  f.kind = "crash";
  f.stage = r.first_failure ? r.first_failure->key.stage : "";
  if (r.first_failure) {
    f.step = r.first_failure->key.step;
    f.layer = r.first_failure->key.layer;
  }
  f.evidence = {{"check", check}, {"crash", battery::first_line(r.crash)}};
  return f;
}

bool wanted(const VerifyArgs& a, const std::string& name) {
  return a.checks.empty() || std::find(a.checks.begin(), a.checks.end(), name) != a.checks.end();
}

void note_check(Outcome& out, const CheckInfo& c, const std::string& skip, std::size_t findings_before) {
  out.checks.push_back({{"name", c.name},
                        {"aims_at", c.aim},
                        {"ran", skip.empty()},
                        {"skip_reason", skip},
                        {"findings", out.findings.size() - findings_before}});
}

void run_battery(const VerifyArgs& a, const Policy& policy, Outcome& out) {
  const std::vector<battery::Part> parts = battery::plan_parts(a.check);
  out.skipped_note = battery::skipped_by_flag_note(parts);
  std::string crash_cause;  // what the memory part found, which later crashes likely are
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const battery::Part& p = parts[i];
    const std::string command = battery::rerun_command(p, a.check.report.policy);
    if (!p.skip_reason.empty()) {
      if (p.skip_reason == battery::kSkippedByFlag)
        fmt::print("  check: {:<26} SKIPPED  {}\n", p.name, p.skip_reason);
      out.parts.push_back(
          {{"name", p.name}, {"skipped", true}, {"verdict", p.skip_reason}, {"command", command}});
      continue;
    }
    battery::begin_progress(a.check.meter, fmt::format("check: {}", p.name), p.opt);
    const battery::PartOutcome o = battery::run_part(p, policy, "", int(i));
    if (a.check.meter) a.check.meter->clear();
    if (!o.not_judged.empty()) {
      fmt::print("  check: {:<26} SKIPPED  {}\n", p.name, o.not_judged);
      out.parts.push_back(
          {{"name", p.name}, {"skipped", true}, {"verdict", o.not_judged}, {"command", command}});
      continue;
    }
    fmt::print("  check: {:<26} {:<8} {}\n", p.name, exit_word(o.exit_code), battery::first_line(o.verdict));
    if (i == 0) crash_cause = battery::crash_after_memory_error(o);
    if (o.exit_code == kExitCrashed && !crash_cause.empty()) fmt::print("         cause: {}\n", crash_cause);
    out.parts.push_back({{"name", p.name},
                         {"skipped", false},
                         {"exit_code", o.exit_code},
                         {"verdict", battery::first_line(o.verdict)},
                         {"command", command}});
    if (o.exit_code == kExitParity) continue;
    if (o.exit_code == kExitRefused || o.exit_code == kExitUsage) {
      out.refused = true;
      out.bad_input = out.bad_input || o.exit_code == kExitUsage;
      if (out.refusal.empty()) {
        out.refusal = battery::first_line(o.verdict);
        out.refusal_report = o.verdict;
      }
      continue;
    }
    if (o.exit_code == kExitCrashed) out.crashed = true;
    Finding f;
    f.from_check_part = true;
    f.kind = part_kind(p.name, o.exit_code, o.first_failure);
    // Memcheck's read of bytes nothing wrote is the class poison runs name `uninit`, with its line.
    if (f.kind == "memory" && o.verdict.find(simt::memcheck_uninit_note) != std::string::npos)
      f.kind = "uninit";
    if (o.first_failure) {
      f.stage = o.first_failure->key.stage;
      f.step = o.first_failure->key.step;
      f.layer = o.first_failure->key.layer;
      f.mode = o.first_failure->mode;
    }
    // A later part failing where an earlier one already did says nothing new.
    const bool seen = std::any_of(out.findings.begin(), out.findings.end(), [&](const Finding& g) {
      return (g.kind == f.kind ||
              (g.kind == "parity" && f.kind != "race" && f.kind != "hazard" && f.kind != "memory")) &&
             g.stage == f.stage;
    });
    if (seen) continue;
    f.evidence = {{"part", p.name},
                  {"aims_at", p.aim},
                  {"verdict", battery::first_line(o.verdict)},
                  {"command", command}};
    if (f.kind == "crash" && !crash_cause.empty()) f.evidence["likely_cause"] = crash_cause;
    out.findings.push_back(std::move(f));
  }
}

void run_new_checks(const VerifyArgs& a, const Policy& policy, const ScratchDir& dir, Outcome& out) {
  const CheckArgs& c = a.check;
  const bool dump = c.candidate.rfind("dump:", 0) == 0;
  const Mode mode = dump ? Mode::chained : Mode::isolated;
  const bool simt = battery::runs_on_simt(c.candidate);
  const auto skip_for = [&](const std::string& name) -> std::string {
    if (!wanted(a, name)) return "not asked for (--checks)";
    if (dump && (name == "poison" || name == "perturb" || name == "returns-input"))
      return "a dump replays what its engine computed once: it neither reads memory nor takes new inputs";
    if (name == "poison" && !simt)
      return fmt::format("{} does not run on the SIMT runtime, whose memory the poison fills", c.candidate);
    return "";
  };
  const bool any = std::any_of(std::begin(kChecks) + 1, std::end(kChecks),
                               [&](const CheckInfo& k) { return skip_for(k.name).empty(); });
  if (!any) {
    for (auto k = std::begin(kChecks) + 1; k != std::end(kChecks); ++k)
      note_check(out, *k, skip_for(k->name), out.findings.size());
    return;
  }
  // Run A: the poison of NaN payloads; the base every cheat detector reads.
  battery::begin_progress(c.meter, "the NaN poison's run", common_options(c));
  TracedRun run_a = traced_run(c, mode, SimtOptions::kPoisonNan, {}, dir.file("poison-nan.h5"), policy);
  if (!run_a.report.crash.empty()) {
    out.crashed = true;
    out.findings.push_back(crash_finding("poison", run_a.report));
    return;
  }
  for (auto k = std::begin(kChecks) + 1; k != std::end(kChecks); ++k) {
    const std::string name = k->name;
    const std::string skip = skip_for(name);
    const std::size_t before = out.findings.size();
    if (skip.empty()) {
      battery::begin_progress(c.meter, name, common_options(c));
      std::vector<Finding> found;
      if (name == "poison") {
        const TracedRun run_b =
            traced_run(c, mode, SimtOptions::kPoisonFinite, {}, dir.file("poison-finite.h5"), policy);
        if (!run_b.report.crash.empty()) {
          out.crashed = true;
          found.push_back(crash_finding(name, run_b.report));
        } else {
          found = verify::poison_findings(*run_a.trace, *run_b.trace, run_a.report.launches, mode);
          add_uninit_lines(c, mode, policy, found);
          add_local_lines(c, mode, policy, dir, run_a, found);
        }
      } else if (name == "perturb") {
        // Every prompt token moved to another id: every stage's input changes.
        const int vocab = load_config_spec(c.model, c.layers).vocab;
        std::vector<int> tokens(run_a.report.tokens.begin(),
                                run_a.report.tokens.begin() + run_a.report.prompt_tokens);
        for (int& t : tokens) t = (t + 1 + vocab / 2) % vocab;
        const TracedRun run_p =
            traced_run(c, mode, SimtOptions::kPoisonNan, tokens, dir.file("perturbed.h5"), policy);
        if (!run_p.report.crash.empty()) {
          out.crashed = true;
          found.push_back(crash_finding(name, run_p.report));
        } else {
          found = verify::insensitive_findings(*run_a.trace, *run_p.trace, mode);
        }
      } else if (name == "cached") {
        found = verify::cached_findings(*run_a.trace, mode);
      } else if (name == "returns-input") {
        found = verify::returns_input_findings(*run_a.trace, mode);
      } else if (name == "precision") {
        found = verify::low_precision_findings(*run_a.trace, mode);
      }
      for (Finding& f : found) out.findings.push_back(std::move(f));
      if (c.meter) c.meter->clear();
      fmt::print("  {:<33} {} finding(s)\n", name, out.findings.size() - before);
    } else {
      fmt::print("  {:<33} SKIPPED  {}\n", name, skip);
    }
    note_check(out, *k, skip, before);
  }
}

nlohmann::json finding_json(const Finding& f) {
  return {{"kind", f.kind},        {"stage", f.stage},          {"layer", f.layer},
          {"step", f.step},        {"mode", mode_name(f.mode)}, {"occurrences", f.occurrences},
          {"evidence", f.evidence}};
}

}  // namespace

void add_verify_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<VerifyArgs>();
  CheckArgs& c = args->check;
  c.decode_steps = battery::kVerifyDecodeSteps;
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Verify a candidate nobody reviewed: the check battery, then runs under two memory poisons "
      "(uninit), on other inputs (input_insensitive), and the cheat detectors (cached_output, "
      "returns_input, low_precision); one JSON verdict with every finding's kind, stage and evidence "
      "(docs/verify.md). Exit 0 pass, 1 findings, 2 bad input, 3 refused by a gate, 4 the candidate crashed");
  cmd->add_option("--model", c.model, "Model: a synthetic preset, GGUF file or HF directory")
      ->capture_default_str();
  cmd->add_option(
         "--candidate", c.candidate,
         "The candidate to verify (built-in name, PATH.so[:NAME], or a kernel FILE.cu with --stage-map)")
      ->capture_default_str();
  cmd->add_option("--stage-map", args->stage_map,
                  "With --candidate FILE.cu: a YAML file with `kind` (" + scaffold_kind_names() +
                      "), `entry` (the .cu's host function the kind's glue calls) and optionally `dtype` "
                      "(f32, or f16 for " +
                      scaffold_kind_names(true) + "); docs/verify.md");
  cmd->add_option("--seed", c.seed, "Seed of the synthetic weights and the prompt")->capture_default_str();
  cmd->add_option("--layers", c.layers, "Only the first N layers (0: all)")->capture_default_str();
  cmd->add_option("--decode-steps", c.decode_steps, "Decode steps of every run")->capture_default_str();
  cmd->add_option("--fill", c.fill, "reference: stages the candidate does not produce are filled")
      ->check(CLI::IsMember({"none", "reference"}))
      ->capture_default_str();
  cmd->add_option("--numerics", c.numerics, "How the candidate computes (run --help, docs/policies.md)");
  add_timeout_flag(cmd, c.timeout_s);
  add_python_flag(cmd);
  c.sandbox = true;
  cmd->add_flag("!--no-sandbox", c.sandbox,
                "Run the candidate's code unsandboxed (by default every process of it has no network, writes "
                "only under a temp dir, no exec or non-AF_UNIX socket and rlimits; docs/sandbox.md)");
  cmd->add_option("--policy", c.report.policy,
                  "A tolerance policy file or installed name (docs/policies.md); default: the built-in one");
  std::vector<std::string> names;
  for (const CheckInfo& k : kChecks) names.push_back(k.name);
  cmd->add_option("--checks", args->checks, "Only these checks (default: all)")
      ->delimiter(',')
      ->check(CLI::IsMember(names));
  cmd->add_option("--skip-part", c.skip_parts,
                  "A part of the check battery not to run, named as `check` lists it (repeatable): SKIPPED, "
                  "never a pass, and counted in the verdict line");
  cmd->add_option("--json", args->json, "Write the verdict here as JSON");
  cmd->add_flag("--progress", c.progress,
                "Print where verify is every 10 s where stderr is no terminal (a terminal always shows it)");
  cmd->add_option("--work-dir", args->work_dir, "Keep the traces of verify's own runs here");
  cmd->add_flag("--keep-traces", args->keep, "Do not remove the temporary directory of the traces");
  cmd->callback([args, cmd, &exit_code] {
    remove_stale_scratch_dirs();
    const CheckArgs& c = args->check;
    const std::string candidate = c.candidate;  // as given: a .cu stays the candidate in the verdict
    std::optional<BareCandidate> bare;
    bool build_kept = false;
    Outcome out;
    try {
      const Policy policy = load_policy(c.report);
      const std::optional<StageMap> map =
          stage_map_for(candidate, args->stage_map);  // errors before any work
      if (map) model_for_kernel_file(candidate, *map, args->check.model, cmd->count("--model") > 0);
      (void)load_config_spec(c.model, c.layers);  // a model that does not load: exit 2 before any run
      // The runs' traces: --work-dir, or a temporary directory removed unless --keep-traces.
      const ScratchDir dir(args->work_dir, "driftscope-verify", args->keep);
      if (map) {
        default_fill_for_kernel_file(candidate, *map, args->check.fill, cmd->count("--fill") > 0);
        build_kept = dir.kept();
        bare = build_bare_candidate(candidate, *map, dir.path(), build_kept);
        args->check.candidate = bare->plugin;
      }
      fmt::print(
          "driftscope verify: {} vs {}, seed {}, {} decode steps{}\n", c.model, candidate, c.seed,
          c.decode_steps,
          cmd->count("--decode-steps") > 0
              ? ""
              : fmt::format(" (verify's default, one fewer than check's {}: it reruns the candidate for "
                            "its own checks)",
                            battery::kCheckDecodeSteps));
      std::fflush(stdout);  // the runs take minutes: what runs is said first, even into a pipe
      // Where verify is: every run tells the meter its layers (battery::common_options).
      std::optional<ProgressMeter> meter;
      if (const auto style = ProgressMeter::style_for(c.progress); style != ProgressMeter::Style::off) {
        meter.emplace(style, stderr);
        args->check.meter = &*meter;
      }
      const std::size_t before = out.findings.size();
      if (wanted(*args, "check")) run_battery(*args, policy, out);
      note_check(out, kChecks[0], wanted(*args, "check") ? "" : "not asked for (--checks)", before);
      if (out.refused || out.crashed) {
        // Nothing more to learn from running it again: the battery already says why.
        const std::string why =
            out.refused ? "the candidate was refused by a gate" : "the candidate crashed in the battery";
        for (auto k = std::begin(kChecks) + 1; k != std::end(kChecks); ++k)
          note_check(out, *k, why, out.findings.size());
      } else {
        run_new_checks(*args, policy, dir, out);
      }
    } catch (const GateRefusal& e) {
      out.refused = true;
      out.refusal = battery::first_line(e.what());
      out.refusal_report = e.what();
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
      return;
    }
    verify::fold_explained(out.findings);
    exit_code = out.crashed             ? kExitCrashed
                : !out.findings.empty() ? kExitFailure
                : out.bad_input         ? kExitUsage
                : out.refused           ? kExitRefused
                                        : kExitParity;
    for (const Finding& f : out.findings)
      fmt::print("  FINDING {:<18} {} (layer {}, step {}, {}){}\n", f.kind, f.stage.empty() ? "-" : f.stage,
                 f.layer, f.step, mode_name(f.mode),
                 f.occurrences > 1 ? fmt::format(", {} calls", f.occurrences) : "");
    if (out.refused) fmt::print("  {}: {}\n", out.bad_input ? "bad input" : "refused", out.refusal_report);
    fmt::print("VERIFY {}: {} finding(s){}\n", exit_word(exit_code), out.findings.size(), out.skipped_note);
    if (args->json.empty()) return;
    nlohmann::json j = {{"model", c.model},
                        {"candidate", candidate},
                        {"seed", c.seed},
                        {"decode_steps", c.decode_steps},
                        {"layers", c.layers},
                        {"verdict", exit_code == kExitParity ? "pass" : "fail"},
                        {"exit_code", exit_code},
                        {"exit_word", exit_word(exit_code)},
                        {"findings", nlohmann::json::array()},
                        {"checks", out.checks},
                        {"check_parts", out.parts}};
    if (bare) {
      j["stage_map"] = args->stage_map;
      j["candidate_build"] = candidate_build_json(*bare, build_kept);
    }
    if (out.refused) j["refused"] = out.refusal;
    for (const Finding& f : out.findings) j["findings"].push_back(finding_json(f));
    try {
      write_text(args->json, j.dump(2) + "\n");
    } catch (const InputError& e) {
      fmt::print(stderr, "error: --json {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
