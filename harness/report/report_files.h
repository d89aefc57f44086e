// Machine-readable reports of a run (or of a re-judged trace): JSON, JUnit XML, Markdown.
// `driftscope run` and `driftscope report` both write them through here.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "runner.h"

namespace ds {

struct ReportFiles {
  std::string json, junit, markdown;  // empty: not written
};

nlohmann::json stage_json(const StageResult& r);
nlohmann::json report_json(const RunReport& report);
std::string junit_xml(const RunReport& report);
// One <testsuite> element (a JUnit file holds one per case of a matrix); adds its testcases to `n`.
struct JunitCounts {
  std::size_t tests = 0, failures = 0;
};
std::string junit_testsuite(const RunReport& report, const std::string& name, JunitCounts& n);
// A <testsuite> for a case that judged nothing (bad input, gate refusal): one failing testcase.
std::string junit_error_testsuite(const std::string& name, const std::string& type,
                                  const std::string& message, JunitCounts& n);
std::string markdown_report(const RunReport& report);
// Writes one report file whole (output_file.h: never left truncated); throws InputError naming it
// and why when it cannot be written.
void write_text(const std::string& path, const std::string& text);
// One report file of a set: its path (empty: not asked for) and how to make its text.
struct ReportText {
  const std::string& path;
  std::function<std::string()> text;
};
// Writes every file of the set whose path is given, each whole or not at all; one that fails does
// not stop the others. Throws InputError naming each file that failed and why, and those written.
void write_each(const std::vector<ReportText>& files);
// Writes every requested file (write_each).
void write_report_files(const RunReport& report, const ReportFiles& files);

}  // namespace ds
