// The console table, in the spirit of seeds/004's parity printout: one line per judged stage,
// the first values of both sides under each failure, then the verdict.
#pragma once

#include <cstdio>
#include <string>

#include "runner.h"

namespace ds {

struct ConsoleOptions {
  bool only_failures = false;
  bool color = false;
};

std::string format_stage_line(const StageResult& r, bool color);
void print_report(std::FILE* out, const RunReport& report, const ConsoleOptions& opt);

}  // namespace ds
