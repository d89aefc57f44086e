#include "matrix_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "report_text.h"
#include "stage_catalog.h"

namespace ds {

int matrix_exit_code(const std::vector<CaseOutcome>& cases) {
  int rc = kExitParity;
  // The codes are ordered by severity, so the worst case is the largest.
  for (const auto& c : cases) rc = std::max(rc, c.exit_code);
  return rc;
}

std::string_view case_verdict(const CaseOutcome& c) {
  if (!c.finished) return "INCOMPLETE";
  if (c.report && !c.report->skipped.empty()) return "SKIPPED";
  return exit_word(c.exit_code);
}

std::string case_reason(const CaseOutcome& c) {
  std::string why;
  if (!c.error.empty()) {
    why = c.error.substr(0, c.error.find('\n'));  // a gate refusal's first line says it all
  } else if (c.report && c.report->first_failure) {
    const StageResult& f = *c.report->first_failure;
    why = fmt::format(
        "{} of {}, step {} ({}): {}", f.key.stage,
        f.key.layer == kModelLayer ? std::string("the model") : fmt::format("layer {}", f.key.layer),
        f.key.step, mode_name(f.mode), status_name(f.status));
  } else if (c.report && (c.exit_code != kExitParity || !c.report->skipped.empty())) {
    why = c.report->verdict;
  }
  if (!c.finished) {
    const std::string what =
        c.report && c.report->incomplete ? c.report->incomplete->why : std::string("the run did not finish");
    why = what + (why.empty() ? "" : "; " + why);
  }
  return why.empty() ? "-" : why;
}

// The candidate column: the candidate, and the probe it ran under.
static std::string candidate_cell(const CaseSpec& s) {
  return s.probe.empty() ? s.candidate : fmt::format("{} --probe {}", s.candidate, s.probe);
}

void print_matrix_summary(std::FILE* out, const std::vector<CaseOutcome>& cases) {
  std::size_t wm = 5, wc = 9;
  for (const auto& c : cases) {
    wm = std::max(wm, c.spec.model.size());
    wc = std::max(wc, candidate_cell(c.spec).size());
  }
  fmt::print(out, "\nMatrix summary: {} case(s)\n", cases.size());
  fmt::print(out, "{:<9} {:<{}} {:<{}} {:>6}  {:<10} {:>4}  {}\n", "case", "model", wm, "candidate", wc,
             "seed", "verdict", "exit", "first failing stage / reason");
  for (const auto& c : cases)
    fmt::print(out, "{:<9} {:<{}} {:<{}} {:>6}  {:<10} {:>4}  {}\n",
               fmt::format("{}/{}", c.spec.index, c.spec.of), c.spec.model, wm, candidate_cell(c.spec), wc,
               c.spec.seed, case_verdict(c), c.exit_code, case_reason(c));
  std::size_t bad = 0;
  for (const auto& c : cases) bad += c.exit_code != kExitParity || !c.finished;
  fmt::print(out, "{} of {} case(s) not at parity; exit code {}\n", bad, cases.size(),
             matrix_exit_code(cases));
}

nlohmann::json matrix_json(const std::vector<CaseOutcome>& cases) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : cases) {
    nlohmann::json j = {{"case",
                         {{"index", c.spec.index},
                          {"of", c.spec.of},
                          {"shard", c.shard},
                          {"model", c.spec.model},
                          {"candidate", c.spec.candidate},
                          {"seed", c.spec.seed},
                          {"probe", c.spec.probe},
                          {"command_line", c.command_line}}},
                        {"key", c.spec.key()},
                        {"verdict", std::string(case_verdict(c))},
                        {"exit_code", c.exit_code},
                        {"finished", c.finished},
                        {"reason", case_reason(c)},
                        {"trace", c.trace}};
    if (!c.error.empty()) j["error"] = c.error;
    j["report"] = c.report ? report_json(*c.report) : nlohmann::json(nullptr);
    list.push_back(std::move(j));
  }
  return {{"exit_code", matrix_exit_code(cases)}, {"cases", std::move(list)}};
}

std::string matrix_junit_xml(const std::vector<CaseOutcome>& cases) {
  std::size_t tests = 0, failures = 0;
  std::string suites;
  for (const auto& c : cases) {
    const std::string name = fmt::format("driftscope.{}", c.spec.key());
    JunitCounts n;
    suites += c.report && c.error.empty()
                  ? junit_testsuite(*c.report, name, n)
                  : junit_error_testsuite(name, std::string(case_verdict(c)), case_reason(c), n);
    tests += n.tests;
    failures += n.failures;
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"{}\" "
      "failures=\"{}\">\n{}</testsuites>\n",
      tests, failures, suites);
}

std::string matrix_markdown(const std::vector<CaseOutcome>& cases) {
  std::string out =
      fmt::format("# driftscope: {} case(s), exit code {}\n\n", cases.size(), matrix_exit_code(cases));
  out += "| case | model | candidate | seed | verdict | exit | first failing stage / reason |\n";
  out += "|---:|---|---|---:|---|---:|---|\n";
  auto cell = [](const std::string& s) { return markdown_cell(s); };
  for (const auto& c : cases)
    out += fmt::format("| {}/{} | `{}` | `{}` | {} | {} | {} | {} |\n", c.spec.index, c.spec.of,
                       cell(c.spec.model), cell(candidate_cell(c.spec)), c.spec.seed, case_verdict(c),
                       c.exit_code, cell(case_reason(c)));
  for (const auto& c : cases) {
    out += fmt::format("\n## Case {}/{}: {}\n\n", c.spec.index, c.spec.of, cell(c.spec.key()));
    if (!c.command_line.empty()) out += fmt::format("Reproduce alone: `{}`\n\n", c.command_line);
    if (!c.report) {
      out += fmt::format("**{}**: {}\n", case_verdict(c), cell(case_reason(c)));
      continue;
    }
    // The case's own report, its headings one level down.
    const std::string md = markdown_report(*c.report);
    for (std::size_t a = 0; a < md.size();) {
      const std::size_t b = std::min(md.find('\n', a), md.size());
      const std::string line = md.substr(a, b - a);
      out += (line.rfind('#', 0) == 0 ? "##" : "") + line + "\n";
      a = b + 1;
    }
  }
  return out;
}

}  // namespace ds
