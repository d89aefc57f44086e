// The checks `driftscope verify` adds to the `check` battery, each a comparison of traces that
// ordinary runs wrote: poison invariance (two runs under different memory poison), the cheat
// detectors (a rerun on other inputs, every call of a stage against the others, outputs against
// inputs, the error against lower precisions), each finding named by kind and stage.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "launch_log.h"
#include "result.h"
#include "trace_reader.h"

namespace ds::cli::verify {

// Finding kinds (docs/verify.md), as the JSON verdict spells them.
inline constexpr const char* kUninit = "uninit";
inline constexpr const char* kInputInsensitive = "input_insensitive";
inline constexpr const char* kCachedOutput = "cached_output";
inline constexpr const char* kReturnsInput = "returns_input";
inline constexpr const char* kLowPrecision = "low_precision";

struct Finding {
  std::string kind;
  std::string stage;
  int step = 0, layer = 0;
  Mode mode = Mode::isolated;
  int occurrences = 1;  // calls of the stage (steps x layers) showing the same thing
  nlohmann::json evidence = nlohmann::json::object();
  bool from_check_part = false;  // a part of the check battery's, not one of verify's own checks
};

// Whether launch `l` is one of those that made the call of `stage` at step, layer and mode.
inline bool made_by(const StepLaunch& l, int step, int layer, Mode mode, const std::string& stage) {
  return l.step == step && l.layer == layer && l.mode == mode &&
         std::find(l.stages.begin(), l.stages.end(), stage) != l.stages.end();
}

// Every stage whose candidate output differs between run `a` and run `b`, which ran the same
// inputs with memory filled with different poison; the kernels of the step that made it come from
// `launches` (run a's records). One finding per stage: its first call, and how many calls differ.
std::vector<Finding> poison_findings(const trace::TraceReader& a, const trace::TraceReader& b,
                                     const std::vector<StepLaunch>& launches, Mode mode);
// Stages whose output is bit-identical between run `a` and run `perturbed` (other prompt tokens)
// while the reference's output, stored at the candidate's dtype, changed.
std::vector<Finding> insensitive_findings(const trace::TraceReader& a, const trace::TraceReader& perturbed,
                                          Mode mode);
// Stages whose output at one call is bit-identical to their output at an earlier call (another
// layer or step) while the reference's differs: an output kept from an earlier call.
std::vector<Finding> cached_findings(const trace::TraceReader& a, Mode mode);
// Stages whose output equals one of their step's inputs (captured with --capture inputs) value for
// value, where the reference's output at the candidate's dtype does not.
std::vector<Finding> returns_input_findings(const trace::TraceReader& a, Mode mode);
// Stages whose error against the oracle sits nearer the rounding error of the next lower dtype
// than that of the declared one (docs/verify.md: the ratio, and its threshold).
std::vector<Finding> low_precision_findings(const trace::TraceReader& a, Mode mode);

// A stage that fails a part of the battery (kind parity, probe, tail or batch) and draws a finding
// of a kind that says why (uninit, input_insensitive, cached_output, returns_input, low_precision,
// memory, race, hazard) is one finding, of that kind: the battery's are folded into it, kept in its
// evidence as `also_fails` (part and verdict each), and it takes the first of their places. Two
// `uninit` findings of one stage, memcheck's (the battery's memory part) and the poison runs', are
// one too, memcheck's evidence kept under `memcheck`.
void fold_explained(std::vector<Finding>& findings);

// The dtype below `declared` a cheaper kernel would compute in (f32 -> f16, f16 -> bf16, f64 -> f32);
// nullopt when there is none to compare against.
std::optional<DType> next_lower_dtype(DType declared);
// Where a finding's log(err_cand / err_declared) / log(err_lower / err_declared) starts to count.
inline constexpr double kLowPrecisionRatio = 0.8;
// ... and where it stops: an RMS error past this many times the lower dtype's rounding is a wrong
// result (parity's business), not a cheaper precision.
inline constexpr double kLowPrecisionBand = 8;

}  // namespace ds::cli::verify
