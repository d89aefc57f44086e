// A run that stops before any stage runs (refused by a gate, or bad input) still leaves a trace:
// the usual root attributes and run JSON, zero summary rows, and a /result that says why. Without
// it a nightly case that stopped early would vanish from `merge` and `report` instead of being
// reported as refused or bad input.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace ds::trace {

// The "status" of a result JSON: how the run ended. Traces written before it existed ran.
inline constexpr const char* kStatusRan = "ran";
inline constexpr const char* kStatusRefused = "refused";
inline constexpr const char* kStatusBadInput = "bad-input";
// Nothing to judge: the run's probe aims at a block kind the model lacks (a GDN probe on a model
// with no Gated DeltaNet layer). Exit 0, but never a PASS: no stage ran.
inline constexpr const char* kStatusSkipped = "skipped";
// The trace could not be written (disk full): stored in /write_error (trace_commit.h), not /result,
// and read as a run that did not finish, whose written rows are still shown.
inline constexpr const char* kStatusWriteFailed = "write-failed";

struct StoppedRun {
  std::string status;  // kStatusRefused, kStatusBadInput, kStatusSkipped or kStatusWriteFailed
  int exit_code = 0;   // 3 for a refusal, 2 for bad input or a failed write, 0 skipped
  std::string reason;  // the gate's refusal report, or the input error naming the file/field
  // Known when the gate ran: the ops the model requires, the candidate supports and lacks.
  std::string required_ops, supported_ops, missing_ops;
};

// The /result JSON of a stopped run: status, exit_code, reason, verdict (first line of the
// reason, starting REFUSED / BAD-INPUT / INCOMPLETE), tokens (empty) and the ops when known.
nlohmann::json stopped_result(const StoppedRun& stop);

// Writes a complete trace holding no stage, only `run` metadata and the stopped result. Throws
// TraceError when the file cannot be written.
void write_stopped_trace(const std::string& path, const nlohmann::json& root_attrs, const nlohmann::json& run,
                         const StoppedRun& stop);

}  // namespace ds::trace
