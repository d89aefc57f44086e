// The console table: one line per judged stage, both sides' values around the first mismatch
// under each failure, then the verdict. A run with no failure is summarised instead.
#pragma once

#include <cstdio>
#include <string>

#include "runner.h"

namespace ds {

struct ConsoleOptions {
  bool only_failures = false;
  bool color = false;
  // Every row even of a passing run; without it a run with no failure prints a summary.
  bool all_rows = true;
};

std::string format_stage_line(const StageResult& r, bool color);
// ", against baseline B (not the oracle)" for a run judged against --baseline, else empty: the
// note run and report headers carry.
std::string against_baseline(const RunReport& report);

void print_report(std::FILE* out, const RunReport& report, const ConsoleOptions& opt);
// Why a failing stage failed, in one sentence: the policy's note, else the element-wise tolerance.
std::string failure_why(const StageResult& r);

}  // namespace ds
