// `driftscope diff` as a reader wants it: one change per stage (its worst finding), the first
// regression in run order first, and the same result as JSON, JUnit XML and Markdown for a PR.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "report_files.h"
#include "trace_diff.h"

namespace ds {

// Everything the diff found at one stage (step, layer, stage), over both modes.
struct StageChange {
  StageKey key;
  std::vector<Mode> modes;           // the modes with a finding, isolated first
  trace::DiffFinding::Kind worst{};  // the most severe finding
  std::vector<std::string> also;     // the other kinds found here ("error-grew", ...)
  std::string evidence;              // the worst finding's words, with why the stage fails now
  bool regression = false;
  // Regressed only in chained mode while its isolated twin still passes: drift fed from an
  // earlier stage, not a change of this stage's kernel.
  bool inherited = false;
  bool batch = false;  // the traces hold several sequences: where names key.seq
};
// "step 0 layer 0 residual_1 (isolated, chained)"; a batch's "step 0 layer 0 attn of sequence 2 (isolated)"
std::string stage_where(const StageChange& c);

// One matched case (a single trace is one case): either a stop change or its stage changes.
struct CaseDiff {
  std::string key, label;  // TraceCase::key(); label: "BASE GROUP vs CURRENT GROUP" or empty
  std::optional<trace::StopChange> stop;
  std::vector<trace::KeyChange> key_changes;
  std::string build_change;  // "baseline X / current Y" when the plugin builds differ
  trace::DiffReport report;
  std::vector<StageChange> changes;  // regressions in run order, then informational changes
  std::size_t regressions = 0;       // stages that regressed (+1 for model steps gone)
  bool regressed = false;
  const StageChange* first_regression() const;
};

// Groups a diff's findings per stage. Run order is the order stages first appear in the baseline.
CaseDiff summarise_diff(const trace::TraceReader& base, const trace::TraceReader& current,
                        const trace::DiffOptions& opt);

struct DiffOutcome {
  std::string base, current;  // paths
  std::vector<CaseDiff> cases;
  std::vector<std::string> cases_gone, cases_new;  // merged files: keys only on one side
  bool regressed() const;
};

nlohmann::json diff_json(const DiffOutcome& d);
std::string diff_junit_xml(const DiffOutcome& d);
std::string diff_markdown(const DiffOutcome& d);
// Writes every requested file; throws InputError naming a file that cannot be written.
void write_diff_files(const DiffOutcome& d, const ReportFiles& files);

}  // namespace ds
