#include "report_files.h"

#include <fmt/format.h>

#include <fstream>

#include "json_text.h"
#include "matrix_report.h"

namespace ds {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw InputError(fmt::format("{}: cannot write the report file", path));
}

void write_report_files(const RunReport& report, const ReportFiles& files) {
  if (!files.json.empty()) write_text(files.json, trace::json_text(report_json(report), 2) + "\n");
  if (!files.junit.empty()) write_text(files.junit, junit_xml(report));
  if (!files.markdown.empty()) write_text(files.markdown, markdown_report(report));
}

void write_matrix_files(const std::vector<CaseOutcome>& cases, const ReportFiles& files) {
  if (!files.json.empty()) write_text(files.json, trace::json_text(matrix_json(cases), 2) + "\n");
  if (!files.junit.empty()) write_text(files.junit, matrix_junit_xml(cases));
  if (!files.markdown.empty()) write_text(files.markdown, matrix_markdown(cases));
}

}  // namespace ds
