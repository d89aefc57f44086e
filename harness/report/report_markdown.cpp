#include <fmt/format.h>

#include <cmath>

#include "console.h"
#include "report_files.h"
#include "report_text.h"
#include "stage_catalog.h"

namespace ds {

std::string markdown_report(const RunReport& report) {
  const StageCounts n = count_stages(report.results);
  std::string out = fmt::format(
      "# driftscope: {} vs {}{}\n\n**{}**\n\n", report.model, report.candidate,
      report.baseline.empty() ? std::string() : fmt::format(", against baseline {}", report.baseline),
      report.verdict);
  out += fmt::format("Policy: `{}`. {} stages judged, {} failed", report.policy, n.judged, n.failed);
  if (n.filled) out += fmt::format(", {} filled by the reference (not judged)", n.filled);
  out += ".\n\n";
  if (!report.results.empty())
    out += fmt::format(
        "{}\n\n", drift_checked(report.results) ? report.drift : fmt::format("Drift: {}.", kDriftNotChecked));
  if (report.incomplete)
    out += fmt::format("**INCOMPLETE**: {}; the table covers only what was flushed.\n\n",
                       report.incomplete->why);
  if (n.failed == 0) return out;
  out += "| step | layer | stage | mode | status | max abs diff | cosine | floor max abs | note |\n";
  out += "|---:|---:|---|---|---|---:|---:|---:|---|\n";
  for (const auto& r : report.results) {
    if (!is_failure(r)) continue;
    // The console's sentence, so the culprit's row (a tolerance failure the policy left no note
    // for) says why it failed too.
    const std::string note = markdown_cell(failure_why(r));
    out +=
        fmt::format("| {} | {} | `{}` | {} | {} | {:.3e} | {:.8f} | {:.3e} | {} |\n", r.key.step,
                    r.key.layer == kModelLayer ? std::string("-") : std::to_string(r.key.layer), r.key.stage,
                    mode_name(r.mode), status_name(r.status), r.m.max_abs, r.m.cosine, r.floor_max_abs, note);
  }
  return out;
}

}  // namespace ds
