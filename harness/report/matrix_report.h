// Reports over a matrix of cases (a `run` shard or a merged trace): the console summary table,
// the overall exit code, and JSON / JUnit / Markdown files covering every case.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "matrix.h"
#include "report_files.h"
#include "runner.h"

namespace ds {

struct CaseOutcome {
  CaseSpec spec;
  std::string shard;  // "i/N" that ran it; "" when unknown
  int exit_code = kExitParity;
  std::optional<RunReport> report;  // absent when the case stopped before judging anything
  std::string error;                // why it stopped (bad input, gate refusal); "" otherwise
  std::string trace;                // its trace file; "" when none was written
  bool finished = true;             // false: its trace was cut short (the run was killed)
  std::string command_line;         // the single-case command that reproduces it
};

// The worst exit code over the cases: crashed > refused > bad input > parity failure > parity.
int matrix_exit_code(const std::vector<CaseOutcome>& cases);
// PASS, FAIL, BAD-INPUT, REFUSED, CRASHED or INCOMPLETE.
std::string_view case_verdict(const CaseOutcome& c);
// The first failing stage, or why the case stopped; "-" for a passing case.
std::string case_reason(const CaseOutcome& c);

void print_matrix_summary(std::FILE* out, const std::vector<CaseOutcome>& cases);

nlohmann::json matrix_json(const std::vector<CaseOutcome>& cases);
std::string matrix_junit_xml(const std::vector<CaseOutcome>& cases);
std::string matrix_markdown(const std::vector<CaseOutcome>& cases);
// Writes every requested file; throws InputError naming a file that cannot be written.
void write_matrix_files(const std::vector<CaseOutcome>& cases, const ReportFiles& files);

}  // namespace ds
