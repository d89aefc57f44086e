// Machine-readable reports of a run (or of a re-judged trace): JSON, JUnit XML, Markdown.
// `driftscope run` and `driftscope report` both write them through here.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "runner.h"

namespace ds {

struct ReportFiles {
  std::string json, junit, markdown;  // empty: not written
};

nlohmann::json stage_json(const StageResult& r);
nlohmann::json report_json(const RunReport& report);
std::string junit_xml(const RunReport& report);
std::string markdown_report(const RunReport& report);
// Writes every requested file; throws InputError naming a file that cannot be written.
void write_report_files(const RunReport& report, const ReportFiles& files);

}  // namespace ds
