#include <fmt/format.h>

#include "json_text.h"
#include "report_files.h"
#include "report_text.h"
#include "stage_catalog.h"

namespace ds {

std::string junit_testsuite(const RunReport& report, const std::string& name, JunitCounts& n) {
  std::size_t failures = 0, skipped = 0;
  std::string cases;
  for (const auto& r : report.results) {
    const std::string layer = r.key.layer == kModelLayer ? "model" : fmt::format("layer{}", r.key.layer);
    const std::string classname =
        fmt::format("{}.{}.step{}.{}", report.candidate, mode_name(r.mode), r.key.step, layer);
    cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", xml_escape(classname),
                         xml_escape(r.key.stage));
    if (is_failure(r)) {
      ++failures;
      std::string msg = fmt::format("{}: {}", status_name(r.status), r.note);
      if (r.m.first_mismatch >= 0)
        msg += fmt::format(
            " (max |diff| {:.4g}, first mismatch at {}: ref {:.7g} cand {:.7g}, {} of {} mismatched)",
            r.m.max_abs, r.m.first_mismatch, r.m.first_ref, r.m.first_cand, r.m.mismatches, r.m.numel);
      cases += fmt::format("      <failure type=\"{}\" message=\"{}\"/>\n", status_name(r.status),
                           xml_escape(msg));
    } else if (r.status != Status::pass) {
      ++skipped;
      const std::string why =
          r.status == Status::filled
              ? std::string("filled: computed by the reference fill, not by the candidate")
              : fmt::format("{} (expected by the policy)", status_name(r.status));
      cases += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(why));
    }
    cases += "    </testcase>\n";
  }
  // Besides the stages, one failing testcase for a run that judged nothing and one for a run that
  // did not finish: neither is parity, and a CI system reads only these counts.
  std::string run_cases;
  std::size_t tests = report.results.size();
  auto run_failure = [&](std::string_view testcase, std::string_view type, const std::string& message) {
    run_cases += fmt::format(
        "    <testcase classname=\"driftscope\" name=\"{}\">\n      <failure type=\"{}\" message=\"{}\"/>\n"
        "    </testcase>\n",
        testcase, type, xml_escape(message));
    ++tests;
    ++failures;
  };
  if (report.incomplete) run_failure("run-finished", "INCOMPLETE", report.verdict);
  // Leaked device memory is a testcase of its own where it fails the run (--fail-on-leak).
  if (!report.leak_summary.empty() && report.leak_failed) run_failure("no-leak", "leak", report.leak_summary);
  if (!report.skipped.empty()) {
    // Nothing to judge is neither a pass nor a failure: a skipped testcase saying why.
    run_cases += fmt::format(
        "    <testcase classname=\"driftscope\" name=\"any-stage\">\n      <skipped message=\"{}\"/>\n"
        "    </testcase>\n",
        xml_escape(report.verdict));
    ++tests;
    ++skipped;
  } else if (report.results.empty()) {
    run_failure("any-stage", "empty", "no stage was judged");
  }
  if (report.drift_failed || report.drift_start) {
    run_failure("no-drift", "drift", report.drift);
  } else if (!report.results.empty() && !report.incomplete) {  // an unfinished run's drift is unknown
    // Drift gets a testcase of its own either way: a pass when a chained lane found none, skipped
    // (never a silent pass) when the run was isolated-only and did not look.
    const bool checked = drift_checked(report.results);
    run_cases +=
        fmt::format("    <testcase classname=\"driftscope\" name=\"no-drift\">\n{}    </testcase>\n",
                    checked ? std::string()
                            : fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(kDriftNotChecked)));
    ++tests;
    skipped += checked ? 0 : 1;
  }
  std::string out =
      fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\">\n",
                  xml_escape(name), tests, failures, skipped);
  out += run_cases;
  out += cases;
  out += "  </testsuite>\n";
  n.tests += tests;
  n.failures += failures;
  return out;
}

std::string junit_error_testsuite(const std::string& name, const std::string& type,
                                  const std::string& message, JunitCounts& n) {
  ++n.tests;
  ++n.failures;
  return fmt::format(
      "  <testsuite name=\"{0}\" tests=\"1\" failures=\"1\" skipped=\"0\" errors=\"0\">\n"
      "    <testcase classname=\"driftscope\" name=\"run\">\n"
      "      <failure type=\"{1}\" message=\"{2}\"/>\n    </testcase>\n  </testsuite>\n",
      xml_escape(name), xml_escape(type), xml_escape(message));
}

std::string junit_xml(const RunReport& report) {
  JunitCounts n;
  const std::string name = fmt::format("driftscope.{}.{}", report.model, report.candidate);
  // A run stopped before any stage (gate refusal, bad input) is one failing testcase saying why,
  // as the matrix file has for such a case.
  const bool stopped =
      report.results.empty() && (report.exit_code == kExitRefused || report.exit_code == kExitUsage);
  const std::string suite =
      stopped ? junit_error_testsuite(name, std::string(exit_word(report.exit_code)), report.verdict, n)
              : junit_testsuite(report, name, n);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"{}\" "
      "failures=\"{}\">\n{}</testsuites>\n",
      n.tests, n.failures, suite);
}

}  // namespace ds
