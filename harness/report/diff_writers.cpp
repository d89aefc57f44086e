// diff's machine-readable outputs. All three lead with the first regression, as the console does.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "diff_report.h"
#include "json_text.h"
#include "report_text.h"
#include "stage_catalog.h"

namespace ds {

namespace {

nlohmann::json layer_json(int layer) {
  return layer == kModelLayer ? nlohmann::json(nullptr) : nlohmann::json(layer);
}
std::string layer_text(int layer) {
  return layer == kModelLayer ? std::string("model") : fmt::format("{}", layer);
}

nlohmann::json change_json(const StageChange& c) {
  nlohmann::json modes = nlohmann::json::array();
  for (Mode m : c.modes) modes.push_back(mode_name(m));
  return {{"step", c.key.step},
          {"layer", layer_json(c.key.layer)},
          {"stage", c.key.stage},
          {"seq", c.key.seq},
          {"modes", modes},
          {"change", trace::finding_name(c.worst)},
          {"also", c.also},
          {"evidence", c.evidence},
          {"regression", c.regression},
          {"inherited", c.inherited}};
}

// Why a case regressed, in one line, for JUnit's message and the Markdown header.
std::string case_reason(const CaseDiff& c) {
  if (c.stop) return fmt::format("{}: {}", c.stop->kind, c.stop->message);
  if (const StageChange* f = c.first_regression())
    return fmt::format("first regression: {}: {}: {}", stage_where(*f), trace::finding_name(f->worst),
                       f->evidence);
  if (c.report.current_incomplete) return fmt::format("INCOMPLETE: {}", *c.report.current_incomplete);
  if (c.report.stages_of_steps_only_base > 0)
    return fmt::format("the current trace did not run model step(s) {} of the baseline",
                       fmt::join(c.report.steps_only_base, ", "));
  return "no regression";
}

nlohmann::json case_json(const CaseDiff& c) {
  nlohmann::json j = {{"key", c.key}, {"regressed", c.regressed}};
  if (c.stop) {
    j["stop"] = {{"kind", c.stop->kind},
                 {"regression", c.stop->regression},
                 {"message", c.stop->message},
                 {"reason", c.stop->reason}};
    return j;
  }
  nlohmann::json keys = nlohmann::json::array();
  for (const auto& k : c.key_changes)
    keys.push_back({{"what", k.what}, {"base", k.base}, {"current", k.current}});
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& s : c.changes) changes.push_back(change_json(s));
  const trace::DiffReport& d = c.report;
  j.update(
      {{"key_changes", keys},
       {"build_change", c.build_change.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.build_change)},
       {"matched", d.matched},
       {"only_base", d.only_base},
       {"only_current", d.only_current},
       {"steps_gone", d.steps_only_base},
       {"steps_new", d.steps_only_current},
       {"base_incomplete", d.base_incomplete ? nlohmann::json(*d.base_incomplete) : nlohmann::json(nullptr)},
       {"current_incomplete",
        d.current_incomplete ? nlohmann::json(*d.current_incomplete) : nlohmann::json(nullptr)},
       {"regressions", c.regressions},
       {"changes", changes}});
  return j;
}

const CaseDiff* first_regressed_case(const DiffOutcome& d) {
  for (const auto& c : d.cases)
    if (c.first_regression()) return &c;
  return nullptr;
}

}  // namespace

nlohmann::json diff_json(const DiffOutcome& d) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : d.cases) cases.push_back(case_json(c));
  nlohmann::json first = nullptr;
  if (const CaseDiff* c = first_regressed_case(d)) {
    first = change_json(*c->first_regression());
    first["case"] = c->key;
  }
  return {{"base", d.base},
          {"current", d.current},
          {"regressed", d.regressed()},
          {"verdict", d.regressed() ? "REGRESSED" : "NO REGRESSION"},
          {"first_regression", first},
          {"cases", cases},
          {"cases_gone", d.cases_gone},
          {"cases_new", d.cases_new}};
}

std::string diff_junit_xml(const DiffOutcome& d) {
  std::size_t tests = 0, failures = 0;
  std::string suites;
  for (const auto& c : d.cases) {
    std::string body;
    std::size_t n = 0, failed = 0;
    // One testcase for the case as a whole, so a case without changes still counts as a test.
    ++n;
    body += fmt::format("    <testcase classname=\"driftscope.diff\" name=\"{}\">\n", xml_escape(c.key));
    if (c.regressed) {
      ++failed;
      body +=
          fmt::format("      <failure type=\"regression\" message=\"{}\"/>\n", xml_escape(case_reason(c)));
    }
    body += "    </testcase>\n";
    for (const auto& s : c.changes) {
      if (!s.regression) continue;
      ++n;
      ++failed;
      body += fmt::format(
          "    <testcase classname=\"driftscope.diff.step{}.{}\" name=\"{}{}\">\n"
          "      <failure type=\"{}\" message=\"{}\"/>\n    </testcase>\n",
          s.key.step, xml_escape(s.key.layer == kModelLayer ? "model" : fmt::format("layer{}", s.key.layer)),
          xml_escape(s.key.stage), s.batch ? fmt::format(".seq{}", s.key.seq) : std::string(),
          trace::finding_name(s.worst),
          xml_escape(
              fmt::format("{}{}", s.evidence, s.inherited ? " (inherited from an earlier stage)" : "")));
    }
    suites += fmt::format(
        "  <testsuite name=\"driftscope.diff.{}\" tests=\"{}\" failures=\"{}\" skipped=\"0\" "
        "errors=\"0\">\n{}"
        "  </testsuite>\n",
        xml_escape(c.key), n, failed, body);
    tests += n;
    failures += failed;
  }
  for (const auto& k : d.cases_gone) {
    ++tests;
    ++failures;
    suites += fmt::format(
        "  <testsuite name=\"driftscope.diff.{0}\" tests=\"1\" failures=\"1\" skipped=\"0\" errors=\"0\">\n"
        "    <testcase classname=\"driftscope.diff\" name=\"{0}\">\n"
        "      <failure type=\"case-disappeared\" message=\"in the baseline but not in the current file\"/>\n"
        "    </testcase>\n  </testsuite>\n",
        xml_escape(k));
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"{}\" "
      "failures=\"{}\">\n{}</testsuites>\n",
      tests, failures, suites);
}

std::string diff_markdown(const DiffOutcome& d) {
  std::string out = fmt::format("# driftscope diff: `{}` vs `{}`\n\n**{}**\n\n", markdown_cell(d.base),
                                markdown_cell(d.current), d.regressed() ? "REGRESSED" : "NO REGRESSION");
  if (const CaseDiff* c = first_regressed_case(d)) {
    const StageChange& f = *c->first_regression();
    out += fmt::format("First regression: **{}** ({}): {}\n\n", markdown_cell(stage_where(f)),
                       trace::finding_name(f.worst), markdown_cell(f.evidence));
  }
  for (const auto& k : d.cases_gone)
    out += fmt::format("- case `{}` disappeared (regression)\n", markdown_cell(k));
  for (const auto& k : d.cases_new) out += fmt::format("- case `{}` is new\n", markdown_cell(k));
  if (!d.cases_gone.empty() || !d.cases_new.empty()) out += "\n";
  for (const auto& c : d.cases) {
    if (d.cases.size() > 1) out += fmt::format("## Case `{}`\n\n", markdown_cell(c.key));
    for (const auto& k : c.key_changes)
      out += fmt::format("- warning: different {}: baseline {}, current {}\n", markdown_cell(k.what),
                         markdown_cell(k.base), markdown_cell(k.current));
    if (!c.key_changes.empty()) out += "\n";
    // A single case's first regression is already the page's lead line.
    if (d.cases.size() > 1 || !c.first_regression())
      out += fmt::format("{}: {}\n\n", c.regressed ? "Regressed" : "No regression",
                         markdown_cell(case_reason(c)));
    if (c.stop || c.regressions == 0) continue;
    out += "| step | layer | stage | modes | change | also | note |\n|---:|---:|---|---|---|---|---|\n";
    for (const auto& s : c.changes) {
      if (!s.regression) continue;
      std::vector<std::string_view> modes;
      for (Mode m : s.modes) modes.push_back(mode_name(m));
      out += fmt::format("| {} | {} | `{}`{} | {} | {} | {} | {}{} |\n", s.key.step, layer_text(s.key.layer),
                         markdown_cell(s.key.stage), s.batch ? fmt::format(" (sequence {})", s.key.seq) : "",
                         fmt::join(modes, ", "), trace::finding_name(s.worst), fmt::join(s.also, ", "),
                         markdown_cell(s.evidence), s.inherited ? " (inherited from an earlier stage)" : "");
    }
    const std::size_t informational =
        c.changes.size() - std::size_t(std::count_if(c.changes.begin(), c.changes.end(),
                                                     [](const StageChange& s) { return s.regression; }));
    if (informational)
      out += fmt::format("\n{} more stage(s) changed their output bits within tolerance.\n", informational);
    out += "\n";
  }
  return out;
}

void write_diff_files(const DiffOutcome& d, const ReportFiles& files) {
  write_each({{files.json, [&] { return trace::json_text(diff_json(d), 2) + "\n"; }},
              {files.junit, [&] { return diff_junit_xml(d); }},
              {files.markdown, [&] { return diff_markdown(d); }}});
}

}  // namespace ds
