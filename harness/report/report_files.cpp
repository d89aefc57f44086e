#include "report_files.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "json_text.h"
#include "matrix_report.h"
#include "output_file.h"

namespace ds {

void write_text(const std::string& path, const std::string& text) {
  if (auto why = write_whole_file(path, text))
    throw InputError(fmt::format("{}: cannot write the report file: {}", path, *why));
}

void write_each(const std::vector<ReportText>& files) {
  std::vector<std::string> failed, written;
  for (const ReportText& f : files) {
    if (f.path.empty()) continue;
    if (auto why = write_whole_file(f.path, f.text()))
      failed.push_back(fmt::format("{}: cannot write the report file: {}", f.path, *why));
    else
      written.push_back(f.path);
  }
  if (failed.empty()) return;
  throw InputError(
      fmt::format("{}{}", fmt::join(failed, "; "),
                  written.empty() ? "" : fmt::format(" (written: {})", fmt::join(written, ", "))));
}

void write_report_files(const RunReport& report, const ReportFiles& files) {
  write_each({{files.json, [&] { return trace::json_text(report_json(report), 2) + "\n"; }},
              {files.junit, [&] { return junit_xml(report); }},
              {files.markdown, [&] { return markdown_report(report); }}});
}

void write_matrix_files(const std::vector<CaseOutcome>& cases, const ReportFiles& files) {
  write_each({{files.json, [&] { return trace::json_text(matrix_json(cases), 2) + "\n"; }},
              {files.junit, [&] { return matrix_junit_xml(cases); }},
              {files.markdown, [&] { return matrix_markdown(cases); }}});
}

}  // namespace ds
