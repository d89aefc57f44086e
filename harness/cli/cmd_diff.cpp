// driftscope diff: baseline trace vs current trace; exit 1 on any regression. Merged files (or a
// merged file against a single trace) are matched case by case on (model, candidate, seed).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <memory>

#include "commands.h"
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

// Prints the findings of one pair of traces; returns whether the current one regressed.
bool print_diff(const trace::TraceReader& base, const trace::TraceReader& cur,
                const trace::DiffOptions& opt) {
  const std::vector<trace::KeyChange> changes = trace::key_changes(base, cur);
  print_key_changes(changes);
  // Which plugin builds ran, when they differ: a regression is usually a rebuilt kernel.
  auto build = [](const trace::TraceReader& t) -> std::string {
    const auto c = t.run().find("candidate");
    if (c == t.run().end() || !c->is_object() || !c->contains("plugin") || !(*c)["plugin"].is_object())
      return {};
    const auto& p = (*c)["plugin"];
    return fmt::format("{} version {} sha256 {}", p.value("path", std::string("?")),
                       p.value("version", std::string("?")), p.value("sha256", std::string("?")));
  };
  if (const std::string a = build(base), b = build(cur); a != b)
    fmt::print("candidate build: baseline {}\n                 current  {}\n", a.empty() ? "built-in" : a,
               b.empty() ? "built-in" : b);
  const trace::DiffReport d = trace::diff_traces(base, cur, opt);
  for (const auto& f : d.findings)
    fmt::print("{:<13} step {:>3} {:>6} {:<12} {:<8} {}\n", trace::finding_name(f.kind), f.key.step,
               f.key.layer == kModelLayer ? std::string("model") : fmt::format("L{}", f.key.layer),
               f.key.stage, mode_name(f.mode), f.message);
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
  std::size_t regressions = d.stages_of_steps_only_base > 0;
  for (const auto& f : d.findings) regressions += f.regression;
  fmt::print("{} stages matched, {} only in the baseline, {} only in the current trace; {} regression(s)\n",
             d.matched, d.only_base, d.only_current, regressions);
  if (d.base_incomplete) fmt::print("note: baseline INCOMPLETE: {}\n", *d.base_incomplete);
  if (d.current_incomplete) fmt::print("INCOMPLETE: current trace: {} (regression)\n", *d.current_incomplete);
  if (!changes.empty()) {
    std::vector<std::string> what;
    for (const auto& k : changes) what.push_back(k.what);
    fmt::print("warning: different {}: the traces are not two runs of one case\n", fmt::join(what, ", "));
  }
  return d.regressed();
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

// Every case of the baseline must still be in the current file and not have regressed; a case
// only in the current file is new (informational).
bool diff_cases(const DiffArgs& a, const std::vector<trace::TraceCase>& base,
                const std::vector<trace::TraceCase>& cur) {
  std::map<std::string, const trace::TraceCase*> by_key;
  for (const auto& c : cur) by_key[c.key()] = &c;
  std::size_t matched = 0, regressed = 0;
  std::vector<std::string> gone;
  for (const auto& b : base) {
    const auto it = by_key.find(b.key());
    if (it == by_key.end()) {
      gone.push_back(b.key());
      continue;
    }
    fmt::print("\n=== case {} ({} {} vs {} {}) ===\n", b.key(), a.base, b.group, a.current,
               it->second->group);
    bool r = false;
    if (const auto stop = trace::compare_stops(b, *it->second)) {
      print_stop(b.key(), *stop);
      r = stop->regression;
    } else {
      const trace::TraceReader bt(a.base, b.group), ct(a.current, it->second->group);
      r = print_diff(bt, ct, a.opt);
    }
    fmt::print("{}\n", r ? "case REGRESSED" : "case: no regression");
    ++matched;
    regressed += r;
    by_key.erase(it);
  }
  fmt::print("\n");
  for (const auto& k : gone)
    fmt::print("case-disappeared  {}: in the baseline but not in the current file (regression)\n", k);
  for (const auto& [k, c] : by_key) fmt::print("case-new          {}: only in the current file\n", k);
  fmt::print(
      "{} case(s) matched, {} only in the baseline, {} only in the current file; {} case(s) regressed\n",
      matched, gone.size(), by_key.size(), regressed);
  return regressed > 0 || !gone.empty();
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
  cmd->callback([args, &exit_code] {
    try {
      const auto base_cases = trace::list_cases(args->base), cur_cases = trace::list_cases(args->current);
      const bool single = base_cases.size() == 1 && base_cases.front().group == "/" &&
                          cur_cases.size() == 1 && cur_cases.front().group == "/";
      bool regressed = false;
      if (single) {
        // Two single runs are compared whatever their keys: a candidate against its fixed build.
        const trace::TraceReader base(args->base), cur(args->current);
        if (const auto stop = trace::compare_stops(base.trace_case(), cur.trace_case())) {
          print_stop(cur.trace_case().key(), *stop);
          regressed = stop->regression;
        } else {
          regressed = print_diff(base, cur, args->opt);
        }
      } else {
        regressed = diff_cases(*args, base_cases, cur_cases);
      }
      fmt::print("{}\n", regressed ? "REGRESSED" : "NO REGRESSION");
      exit_code = regressed ? kExitFailure : kExitParity;
    } catch (const trace::TraceError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
