// The battery of `driftscope check`, as parts `verify` runs too (cmd_check.cpp holds the code).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy.h"
#include "progress_meter.h"
#include "report_options.h"
#include "result.h"
#include "run_options.h"

namespace ds::cli::battery {

// The decode steps of every run when --decode-steps is not given. verify runs the candidate again
// for its own checks (two poisons, other inputs, the lines behind a finding), so it takes one step
// fewer than check; each says so in its first line.
inline constexpr int kCheckDecodeSteps = 3;
inline constexpr int kVerifyDecodeSteps = 2;

struct CheckArgs {
  std::string model = RunOptions{}.model, candidate = RunOptions{}.candidate;
  std::uint64_t seed = 0;
  int layers = 0, decode_steps = kCheckDecodeSteps;
  double timeout_s = kDefaultTimeoutS;  // --timeout: every part's candidate load and step
  std::string fill = "none", numerics, trace_dir, json;
  ReportOptions report;
  bool progress = false;           // --progress: where the battery is, in a log too
  bool sandbox = false;            // --sandbox (verify: on unless --no-sandbox)
  bool fail_fast = false;          // --fail-fast: the parts after the first that does not pass are not run
  std::vector<std::string> skip_parts;  // --skip-part: parts not run, by name (kSkippedByFlag)
  ProgressMeter* meter = nullptr;  // every run of the battery tells it its layers
};

// The skip reason of a part named by --skip-part.
inline constexpr const char* kSkippedByFlag = "--skip-part: not run, so neither passed nor failed";

// One run of the battery: what it is for, and every option it runs with.
struct Part {
  std::string name, aim;
  RunOptions opt;
  std::string skip_reason;  // non-empty: not run, and why
  // The memory part: it judges memory errors only (a stage merely wrong is the other parts'), and a
  // run memcheck could not look into is skipped. Another part under memcheck judges both.
  bool memory_only = false;
  // A refusal by the capability gate skips the part with its reason rather than failing the
  // battery: the part asks for an optional variant (fused GDN ops with slot ids).
  bool skip_if_refused = false;
};

struct PartOutcome {
  const Part* part;
  int exit_code = 0;
  std::string verdict;                       // one line: the first failing stage, or why it did not run
  std::optional<StageResult> first_failure;  // the stage that verdict names, when one failed
  // Non-empty: the part ran and could not judge what it aims at (memcheck on a run none of whose
  // launches it could look into), and why; reported as skipped, never as a pass.
  std::string not_judged;
  bool skipped() const { return !part->skip_reason.empty() || !not_judged.empty(); }
};

// SIMT candidates are the ones a schedule rerun, the hazard checker and poison can look into.
bool runs_on_simt(const std::string& candidate);
// The run options every part shares: the model, candidate, seed, layers, decode steps, fill,
// numerics and timeout the command was given (no modes: each part sets its own).
RunOptions common_options(const CheckArgs& a);
// The battery's parts for `a`; those --skip-part names skipped (kSkippedByFlag), a name that is
// no part's bad input naming the parts.
std::vector<Part> plan_parts(const CheckArgs& a);
// How many of `parts` --skip-part skipped, as "; N skipped by --skip-part" ("" for none).
std::string skipped_by_flag_note(const std::vector<Part>& parts);
// Tells the meter (if any) that the run `o` begins, as `label`: its layers and steps.
void begin_progress(ProgressMeter* meter, std::string label, const RunOptions& o);
// The `driftscope run` arguments that rerun `opt` alone, each flag once, all read from the options
// the part runs with (so the command cannot drift from the run); `policy` is check's --policy.
std::vector<std::string> rerun_argv(const RunOptions& opt, const std::string& policy);
// The same as one line for a shell: "driftscope run --model ...".
std::string rerun_command(const Part& part, const std::string& policy);
PartOutcome run_part(const Part& part, const Policy& policy, const std::string& trace_dir, int index);
// What a crash of a part after `memory` found a memory error likely is ("" when it found none).
std::string crash_after_memory_error(const PartOutcome& memory);
// The battery's exit code: a crash, else a failure, else a refusal, else bad input, else a pass.
int worst(const std::vector<PartOutcome>& outs);
std::string first_line(const std::string& s);

}  // namespace ds::cli::battery
