// `driftscope merge`: shard traces (single runs or already-merged files, which are flattened)
// into one file. Every run's whole tree is copied losslessly under /cases/<k>, so each case
// stays a complete trace that every reader opens (TraceReader(path, "/cases/<k>")).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "trace_cases.h"

namespace ds::trace {

// One row of /case_index: what a case is, where it came from, how its run ended. Strings are
// fixed-size for a plain compound type (h5py reads them as bytes); the case groups' own
// attributes keep the full values.
inline constexpr int kIndexChars = 256;
struct CaseIndexRow {
  char group[32];  // "cases/<k>"
  char model[kIndexChars];
  char candidate[64];
  std::uint64_t seed;
  std::int32_t case_index, case_of;  // k of M in the matrix run; -1, 0 when not a matrix run
  char shard[16];
  char source[kIndexChars];
  std::uint8_t finished;   // 0: the run was killed before it stored its result
  std::int32_t exit_code;  // -1 when it did not finish
  char verdict[kIndexChars];
  // "ran", "refused" or "bad-input" (a run stopped before any stage, trace_stub.h); "" unfinished.
  char status[16];
};
hid_t case_index_type();  // the compound type of CaseIndexRow (caller closes it)

// Writes `out` from `inputs`; `root_attrs` become string attributes of "/" (tool version, ...).
// Throws TraceError naming the file when an input is not a Driftscope trace or is newer than
// this build, when two inputs hold the same (model, candidate, seed) case, or when `out` is
// also an input. `out` is replaced only when the merge succeeds. Returns the merged cases.
std::vector<TraceCase> merge_traces(const std::vector<std::string>& inputs, const std::string& out,
                                    const nlohmann::json& root_attrs);

}  // namespace ds::trace
