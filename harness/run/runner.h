// The runner: load, gate, then for every model step and layer run the reference and the
// candidate side by side, compare every stage, stream the results into the trace.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "candidate.h"
#include "launch_log.h"
#include "model.h"
#include "ops.h"
#include "policy.h"
#include "result.h"
#include "run_options.h"

namespace ds {

// Exit codes of the CLI (docs/cli.md).
enum ExitCode : int { kExitParity = 0, kExitFailure = 1, kExitUsage = 2, kExitRefused = 3, kExitCrashed = 4 };

// Bad usage or input (unknown model, corrupt file...): exit 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
  // `message` for the terminal; `full`, when it summarises more, for the trace and --json.
  InputError(const std::string& message, std::string full)
      : std::runtime_error(message), full_(std::move(full)) {}
  std::string full() const { return full_.empty() ? std::string(what()) : full_; }

 private:
  std::string full_;
};

// The trace could not be written (disk full): exit 2, as bad input. `recorded`: the trace says so
// (trace_commit.h); false when even that could not be stored (it then reads as a killed run).
struct TraceWriteError : InputError {
  TraceWriteError(const std::string& message, bool recorded) : InputError(message), recorded(recorded) {}
  bool recorded;
};

// A gate refused the run before any compute: exit 3.
struct GateRefusal : std::runtime_error {
  explicit GateRefusal(const std::string& report, std::string missing = {})
      : std::runtime_error(report), missing_ops(std::move(missing)) {}
  // The ops the candidate lacks ("[GdnInplaceIds, SsmConvUpdateIds]"); empty where the gate refused
  // the stages it leaves out rather than an op.
  std::string missing_ops;
};

// End-of-model logits per mode: KL divergence, top-1 agreement, and the first model step whose
// greedy next token differs from the reference's (-1: never).
struct LaneLogits {
  Mode mode = Mode::isolated;
  double max_kl = 0;
  double min_top1 = 1;
  int first_token_divergence = -1;
  // Rows (over every step) whose greedy token differs, and the largest reference margin between
  // the reference's top-1 and the candidate's pick among them: a near-tie when the logits pass.
  int disagreements = 0;
  double max_disagree_margin = 0;
};

struct RunReport {
  std::string model, candidate;
  std::string policy;                // the policy's name
  std::string baseline;              // `--baseline`: what stages were judged against; empty: the oracle
  std::vector<StageResult> results;  // execution order
  std::optional<StageResult> first_failure;
  std::vector<int> tokens;  // prompt + decode tokens fed to both sides
  std::vector<Mode> modes;  // the lanes run (a dump settles its own: chained)
  // The steps actually run (a dump's tokens and a probe settle their own), and the first step the
  // candidate ran and was judged at (--from-step).
  int prompt_tokens = 0, decode_steps = 0, from_step = 0;
  // Sequences in the run (`run --batch`, docs/batches.md); 1: a run of one sequence. Every row
  // names its sequence (StageKey::seq) and the reports name it where the run had several.
  int batch_size = 1;
  std::string probe;       // run --probe, or empty
  std::string probe_note;  // what the probe rewrote in the weights, or empty
  std::string numerics;    // what the noise floors modelled (numerics_str)
  std::vector<LaneLogits> logits;
  std::vector<StepLaunch> launches;  // the candidate's kernel launches, in launch order
  // Under --simt-memcheck: no launch of the run was checked (none was made, or none of its kernels
  // was built CHECKED), so its silence on memory errors is no verdict.
  bool memcheck_blind = false;
  // Under --simt-memcheck, what the run says of the launches memcheck could not look into (also in
  // notes, where later notes, leaks among them, may follow it); empty when it checked every one.
  std::string memcheck_note;
  // Device memory candidate steps allocated and had not freed when the run's last step ended, by
  // kernel step and allocation site (the SIMT runtime's table; launch_log::live_allocations).
  std::vector<LiveAllocation> leaks;
  std::string leak_summary;          // one sentence on `leaks`, empty when there are none
  bool leak_failed = false;          // --fail-on-leak made `leaks` the run's failure
  std::string crash;                 // why the candidate crashed, when it did
  std::string memory;                // the run's memory estimate, in one line (memory_estimate.h)
  std::vector<std::string> notes;    // what the run settled for the user (e.g. the dump mapping it chose)
  std::optional<int> drift_start;    // first layer whose chained output leaves the noise band for good
  std::string drift;                 // that, in one sentence (empty without a chained run)
  bool drift_failed = false;         // the drift alone failed the run: every stage passed
  // The local check's verdict on the run in one sentence (summarize_local_check); empty where it
  // did not run.
  std::string local_check;
  bool local_vouched = false;  // the local check ran and every step it checked passed it
  int exit_code = kExitParity;
  std::string verdict;  // one sentence
  // Why the run judged nothing and still exits 0 (a probe whose target the model lacks); empty
  // when it ran. Its verdict starts SKIPPED.
  std::string skipped;
  // Why a run stopped before any stage, in full (a gate's report, every missing tensor); empty
  // when it ran.
  std::string stop_reason;
  // The plugin's checked twin this run loaded in its place (a run under the hazard checker).
  std::string checked_twin;
  // Set when the trace re-judged here holds no stored result (its run was killed, hung, or took
  // the harness down): INCOMPLETE, never a pass. The sentence naming the last stage flushed, and
  // that stage.
  struct Incomplete {
    std::string why;
    std::size_t rows_flushed = 0;
    std::optional<StageResult> last;
  };
  std::optional<Incomplete> incomplete;
};

// The word reports print for an exit code: PASS, FAIL, BAD-INPUT, REFUSED, CRASHED.
std::string_view exit_word(int exit_code);

// The report of a run that stopped before any stage (gate refusal: 3, bad input: 2): no results
// and the first line of `reason` as its verdict; report writers show it as REFUSED / BAD-INPUT.
RunReport stopped_report(std::string model, std::string candidate, std::string policy, int exit_code,
                         std::string_view reason);

// Loads `spec` (synthetic:<preset>, a .gguf file, or an HF directory) or throws InputError.
Model load_model_spec(const std::string& spec, std::uint64_t seed, int layers);
// Only the configuration (header) of `spec`: what the gates need, without reading weights.
ModelConfig load_config_spec(const std::string& spec, int layers);
// `--gdn-variant` (comma-separated plain, inplace, ids, conv-update, conv-update-ids) as the
// fused GDN ops it requests; throws InputError on an unknown name.
OpSet gdn_variant_ops(std::string_view spec);

// The capability gate: the refusal report (naming the missing ops) when `cand` lacks an op the model
// requires, nullopt when it may run.
std::optional<std::string> capability_refusal(const ModelConfig& cfg, const Candidate& cand);
// The same for a given set of required ops (a partial candidate's: those of its own stages).
std::optional<std::string> capability_refusal(const ModelConfig& cfg, const Candidate& cand,
                                              const OpSet& need);

RunReport run_parity(const RunOptions& opt, const Policy& policy);

// Sets first_failure, exit_code and verdict from `results` (a run that judged no stage fails:
// "0 of 0 passed" is not parity). Shared by `run` and `report`.
void conclude(RunReport& report);
// Where drift begins, from the chained layer outputs of every model step, prefill and decode
// (bisect.h's earliest_drift with k = 8 x the noise floor, or its steady-growth trend); fills
// report.drift_start and report.drift. A trend found in a run whose every stage passed turns it into a
// failure (exit 1, report.drift_failed). Call after conclude().
void locate_drift(RunReport& report);
// The local check's verdict on the run (docs/policies.md, "The local check"): as good as an honest
// engine of its numerics given its own inputs, with the worst ratio and where; or worse than its
// numerics explain, where first. Fills report.local_check. Call before locate_drift: a steady drift
// of a run whose every step the local check vouched for is its numerics' own, and does not fail it.
void summarize_local_check(RunReport& report);

}  // namespace ds
