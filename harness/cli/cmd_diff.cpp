// driftscope diff: baseline trace vs current trace; exit 1 on any regression. Merged files (or a
// merged file against a single trace) are matched case by case on (model, candidate, seed).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <memory>

#include "commands.h"
#include "diff_report.h"
#include "runner.h"
#include "stage_catalog.h"
#include "trace_diff.h"

namespace ds::cli {

namespace {

// Below 1 an error that shrank would count as grown; past a million nothing ever would.
constexpr double kMinFactor = 1, kMaxFactor = 1e6;

CLI::Validator factor_bound() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double f = 0;
        std::size_t used = 0;
        try {
          f = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || !(f >= kMinFactor && f <= kMaxFactor))
          return fmt::format(
              "{} is not a growth factor from {:g} to {:g} (2: an error that more than doubled "
              "regressed)",
              text, kMinFactor, kMaxFactor);
        return {};
      },
      fmt::format("FACTOR in [{:g}, {:g}]", kMinFactor, kMaxFactor));
}

struct DiffArgs {
  std::string base, current;
  trace::DiffOptions opt;
  ReportFiles files;
  bool all = false;  // list stages whose bits alone changed too
};

// "3" or "2-5" for a run of steps, else the list.
std::string steps_text(const std::vector<int>& steps) {
  if (steps.size() > 1 && steps.back() - steps.front() == int(steps.size()) - 1)
    return fmt::format("{}-{}", steps.front(), steps.back());
  return fmt::format("{}", fmt::join(steps, ", "));
}

// Runs of different seeds, models, candidates, prompts or step counts are not expected to agree
// bit for bit: say so before any finding, so "bits-changed" everywhere is not read as a change.
void print_key_changes(const std::vector<trace::KeyChange>& changes) {
  if (changes.empty()) return;
  fmt::print("warning: the traces are runs of different keys; stages are matched anyway:\n");
  for (const auto& k : changes) fmt::print("  {:<14} baseline {}   current {}\n", k.what, k.base, k.current);
}

// "STAGE WHERE: CHANGE: EVIDENCE (also ...)", after "First regression" and, in a merged file, the case.
std::string regression_text(const StageChange& f) {
  return fmt::format("{}: {}: {}{}", stage_where(f), trace::finding_name(f.worst), f.evidence,
                     f.also.empty() ? std::string() : fmt::format(" (also {})", fmt::join(f.also, ", ")));
}

// One line per stage, its worst change: what a reviewer scans after the first regression.
void print_change(const StageChange& c) {
  std::vector<std::string_view> modes;
  for (Mode m : c.modes) modes.push_back(mode_name(m));
  fmt::print("{:<13} step {:>3} {:>6} {:<12} {:<17} {}{}{}\n", trace::finding_name(c.worst), c.key.step,
             c.key.layer == kModelLayer ? std::string("model") : fmt::format("L{}", c.key.layer), c.key.stage,
             fmt::format("{}", fmt::join(modes, ",")), c.evidence,
             c.also.empty() ? std::string() : fmt::format(" [also {}]", fmt::join(c.also, ", ")),
             c.inherited ? " [inherited: fed the drift of an earlier stage]" : "");
}

// Prints the findings of one pair of traces, the first regression first.
void print_diff(const CaseDiff& c, bool all) {
  const trace::DiffReport& d = c.report;
  print_key_changes(c.key_changes);
  // Which plugin builds ran, when they differ: a regression is usually a rebuilt kernel.
  if (!c.build_change.empty()) fmt::print("candidate build: {}\n", c.build_change);
  if (const StageChange* f = c.first_regression()) fmt::print("First regression: {}\n", regression_text(*f));
  std::size_t bits_only = 0;
  for (const auto& s : c.changes) {
    if (!s.regression && !all) {
      ++bits_only;
      continue;
    }
    print_change(s);
  }
  if (bits_only)
    fmt::print("{:<13} {} stage(s) changed only their output bytes, within every bound (--all lists them)\n",
               "bits-changed", bits_only);
  if (!d.steps_only_base.empty())
    fmt::print(
        "{:<13} the baseline ran model step(s) {} that the current trace did not: {} stage(s) "
        "not judged now (regression)\n",
        "steps-gone", steps_text(d.steps_only_base), d.stages_of_steps_only_base);
  if (!d.steps_only_current.empty())
    fmt::print(
        "{:<13} the current trace ran model step(s) {} that the baseline did not: {} stage(s) "
        "with nothing to compare against\n",
        "steps-new", steps_text(d.steps_only_current), d.stages_of_steps_only_current);
  fmt::print(
      "{} stages matched, {} only in the baseline, {} only in the current trace; {} stage(s) regressed\n",
      d.matched, d.only_base, d.only_current, c.regressions);
  if (d.base_incomplete) fmt::print("note: baseline INCOMPLETE: {}\n", *d.base_incomplete);
  if (d.current_incomplete) fmt::print("INCOMPLETE: current trace: {} (regression)\n", *d.current_incomplete);
  if (!c.key_changes.empty()) {
    std::vector<std::string> what;
    for (const auto& k : c.key_changes) what.push_back(k.what);
    fmt::print("warning: different {}: the traces are not two runs of one case\n", fmt::join(what, ", "));
  }
}

// A case where either run stopped before any stage: one line and the reason, indented.
void print_stop(const std::string& key, const trace::StopChange& ch) {
  fmt::print("{:<18} {}: {}{}\n", ch.kind, key, ch.message, ch.regression ? " (regression)" : "");
  for (std::size_t a = 0; a < ch.reason.size();) {
    const std::size_t b = std::min(ch.reason.find('\n', a), ch.reason.size());
    fmt::print("    {}\n", ch.reason.substr(a, b - a));
    a = b + 1;
  }
}

CaseDiff diff_case(const std::string& base_path, const std::string& base_group, const std::string& cur_path,
                   const std::string& cur_group, const trace::DiffOptions& opt) {
  const trace::TraceReader bt(base_path, base_group), ct(cur_path, cur_group);
  if (auto stop = trace::compare_stops(bt.trace_case(), ct.trace_case())) {
    CaseDiff c;
    c.key = ct.trace_case().key();
    c.regressed = stop->regression;
    c.stop = std::move(stop);
    return c;
  }
  return summarise_diff(bt, ct, opt);
}

// Every case of the baseline must still be in the current file and not have regressed; a case
// only in the current file is new (informational).
DiffOutcome diff_cases(const DiffArgs& a, const std::vector<trace::TraceCase>& base,
                       const std::vector<trace::TraceCase>& cur) {
  DiffOutcome out{a.base, a.current, {}, {}, {}};
  std::map<std::string, const trace::TraceCase*> by_key;
  for (const auto& c : cur) by_key[c.key()] = &c;
  for (const auto& b : base) {
    const auto it = by_key.find(b.key());
    if (it == by_key.end()) {
      out.cases_gone.push_back(b.key());
      continue;
    }
    out.cases.push_back(diff_case(a.base, b.group, a.current, it->second->group, a.opt));
    out.cases.back().key = b.key();
    out.cases.back().label = fmt::format("{} {} vs {} {}", a.base, b.group, a.current, it->second->group);
    by_key.erase(it);
  }
  for (const auto& [k, c] : by_key) out.cases_new.push_back(k);
  return out;
}

void print_cases(const DiffOutcome& d, bool all) {
  for (const auto& c : d.cases)
    if (const StageChange* f = c.first_regression()) {
      fmt::print("First regression, case {}: {}\n", c.key, regression_text(*f));
      break;
    }
  std::size_t regressed = 0;
  for (const auto& c : d.cases) {
    fmt::print("\n=== case {} ({}) ===\n", c.key, c.label);
    if (c.stop)
      print_stop(c.key, *c.stop);
    else
      print_diff(c, all);
    fmt::print("{}\n", c.regressed ? "case REGRESSED" : "case: no regression");
    regressed += c.regressed;
  }
  fmt::print("\n");
  for (const auto& k : d.cases_gone)
    fmt::print("case-disappeared  {}: in the baseline but not in the current file (regression)\n", k);
  for (const auto& k : d.cases_new) fmt::print("case-new          {}: only in the current file\n", k);
  fmt::print(
      "{} case(s) matched, {} only in the baseline, {} only in the current file; {} case(s) regressed\n",
      d.cases.size(), d.cases_gone.size(), d.cases_new.size(), regressed);
}

}  // namespace

void add_diff_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd =
      app.add_subcommand("diff",
                         "Compare two traces stage by stage (step, layer, stage, mode), or two merged "
                         "files case by case; exit 1 when the current one regressed");
  cmd->add_option("base", args->base, "Baseline trace or merged file")->required();
  cmd->add_option("current", args->current, "Current trace or merged file")->required();
  cmd->add_option("--factor", args->opt.factor,
                  fmt::format("An error (max |diff| or RMS) that grew by more than this many times regressed "
                              "({:g} to {:g})",
                              kMinFactor, kMaxFactor))
      ->check(factor_bound())
      ->capture_default_str();
  cmd->add_flag("--all", args->all, "Also list the stages whose output bytes alone changed (informational)");
  cmd->add_option("--json", args->files.json,
                  "Also write the diff as JSON to this file, the first regression first");
  cmd->add_option("--junit", args->files.junit,
                  "Also write a JUnit XML report (one failing testcase per regressed stage)");
  cmd->add_option("--markdown", args->files.markdown, "Also write a Markdown summary for a pull request");
  cmd->callback([args, &exit_code] {
    try {
      const auto base_cases = trace::list_cases(args->base), cur_cases = trace::list_cases(args->current);
      const bool single = base_cases.size() == 1 && base_cases.front().group == "/" &&
                          cur_cases.size() == 1 && cur_cases.front().group == "/";
      DiffOutcome d{args->base, args->current, {}, {}, {}};
      if (single) {
        // Two single runs are compared whatever their keys: a candidate against its fixed build.
        d.cases.push_back(diff_case(args->base, "/", args->current, "/", args->opt));
        const CaseDiff& c = d.cases.front();
        if (c.stop)
          print_stop(c.key, *c.stop);
        else
          print_diff(c, args->all);
      } else {
        d = diff_cases(*args, base_cases, cur_cases);
        print_cases(d, args->all);
      }
      write_diff_files(d, args->files);
      fmt::print("{}\n", d.regressed() ? "REGRESSED" : "NO REGRESSION");
      exit_code = d.regressed() ? kExitFailure : kExitParity;
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    } catch (const trace::TraceError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
