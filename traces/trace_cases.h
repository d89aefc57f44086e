// A trace file holds one run (a single trace) or many (a merged file, see trace_merge.h). Every
// reader sees both as a list of cases; a case is keyed by (model, candidate, seed), which is how
// nightly files are matched against each other whatever shard or machine produced them.
#pragma once

#include <hdf5.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace_stub.h"

namespace ds::trace {

// "model x candidate x seed S" (and " x probe P" for a run --probe case): how cases are named in
// tables, JUnit suites and diffs.
std::string case_key(const std::string& model, const std::string& candidate, std::uint64_t seed,
                     const std::string& probe = {});

struct TraceCase {
  std::string group = "/";  // "/" for a single trace, "/cases/<k>" in a merged file
  std::string model, candidate;
  std::uint64_t seed = 0;
  std::string probe;         // run --probe, or ""
  int index = -1, of = 0;    // case k of M in the matrix run that wrote it; -1: not a matrix run
  std::string shard;         // "i/N" that ran it; "" when unknown
  std::string command_line;  // the single-case command that reproduces it ("" for a single run)
  std::string source;        // the file the case was merged from ("" in a single trace)
  bool finished = false;     // the run stored its result (false: it was killed mid-run, or its write failed)
  int exit_code = -1;        // the run's own exit code; -1 when it did not finish (2 when its write failed)
  std::string verdict;
  // How the run ended (trace_stub.h): "ran", or "refused" / "bad-input" for a run that stopped
  // before any stage ran; "" when it did not finish. `reason` says why it stopped.
  std::string status, reason;
  bool stopped_early() const { return finished && !status.empty() && status != kStatusRan; }
  std::string key() const { return case_key(model, candidate, seed, probe); }
};

// What a case is, from the trace's run JSON and result JSON (nullopt: the run did not finish).
// Throws TraceError naming `path` and the field when the result's exit_code is not an integer
// from 0 to 4 (the CLI's exit codes), its status, verdict or reason not a string, or a stopped
// run's exit code not its status's.
TraceCase describe_case(const nlohmann::json& run, const std::optional<nlohmann::json>& result,
                        const std::string& path);

// Opens a trace file read-only (SWMR read, so files whose writer was killed open too) and checks
// it is a Driftscope trace of a version this build reads. Throws TraceError naming the file.
hid_t open_trace_file(const std::string& path);
// Whether an open trace file is a merged file.
bool is_merged(hid_t file);

// Every case in the file, in the file's order. Throws TraceError naming the file.
std::vector<TraceCase> list_cases(const std::string& path);

}  // namespace ds::trace
