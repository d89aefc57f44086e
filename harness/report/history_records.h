// What `driftscope history add` keeps of a night: each case's key and outcome, and per stage,
// layer and mode how far its error stood from the noise floor. Read from traces (single or
// merged) through the trace reader; nothing here knows SQLite.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace ds {

inline constexpr std::string_view kStageExpected = "expected";
// Whether a stored stage status is a failure: anything but pass, filled and expected.
bool stage_status_failed(std::string_view status);

// One (stage, layer, mode) of a case over every step (and every sequence of a batch run).
struct StageRecord {
  std::string stage;
  int layer = 0;  // -1: a model-level stage
  std::string mode;
  // The status of its first failing row, or "pass"; for a stage with no judged row, "filled" or
  // kStageExpected (missing or skipped as the policy expected).
  std::string status;
  // The error-to-floor ratio (floor_ratio) at the step where it was largest; nullopt where no row
  // had a floor (an f64 candidate, a run against --baseline, a filled stage) or the error was not
  // finite (a NaN stage).
  std::optional<double> ratio;
  int worst_step = -1;  // the step of `ratio`
};

// A case's outcome, in words: pass, fail, crashed, refused, bad-input, skipped, or incomplete
// (its run did not finish or its trace write failed: never a pass, whatever its flushed rows say).
struct CaseRecord {
  std::string model, candidate, probe;
  std::uint64_t seed = 0;
  std::string outcome;
  std::optional<int> exit_code;  // nullopt: the run stored none (incomplete)
  std::string verdict;           // the run's verdict line, or the INCOMPLETE sentence
  std::string source;            // the trace: FILE, or FILE:GROUP for a case of a merged file
  std::vector<StageRecord> stages;
  std::string key() const;
};

// How many noise floors a stage's error is: the larger of max|d| over the floor's max|d| and the
// RMS over the floor's RMS, each floor raised as the judge raises it (policy.h floor_of, and in
// chained mode chained_floor). nullopt where the row has no floor or the error is not finite.
std::optional<double> floor_ratio(const StageResult& r);

// Every case of every trace in `files`, in the order given (a merged file's cases in its order).
// Throws InputError naming the file for one that is not a readable trace, and naming both files
// when two hold the same case.
std::vector<CaseRecord> read_night(const std::vector<std::string>& files);

}  // namespace ds
