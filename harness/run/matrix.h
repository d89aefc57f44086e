// A nightly run is a matrix of (model x candidate x seed) cases; `--shard i/N` lets N machines
// (CI matrix jobs, Slurm array tasks) each run a disjoint share of it with no coordination.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ds {

struct ShardSpec {
  int index = 0, count = 1;  // 0 <= index < count
  std::string str() const;   // "i/N"
};

// "i/N" with 0 <= i < N; nullopt (and `error` says why) otherwise.
std::optional<ShardSpec> parse_shard(const std::string& spec, std::string& error);

struct CaseSpec {
  int index = 0, of = 1;  // case k of M, model-major then candidate then seed
  std::string model, candidate;
  std::uint64_t seed = 0;
  std::string probe;  // run --probe, or ""
  // "model x candidate x seed S [x probe P]": how a case is named in tables, JUnit suites and diffs.
  std::string key() const;
};

// Every case of the matrix, model-major, then candidate, then seed, then probe.
std::vector<CaseSpec> enumerate_cases(const std::vector<std::string>& models,
                                      const std::vector<std::string>& candidates,
                                      const std::vector<std::uint64_t>& seeds,
                                      const std::vector<std::string>& probes = {""});

// The cases shard `s` runs: k % N == i. Round-robin rather than contiguous blocks, so that the
// big models (listed together) spread over every shard.
std::vector<CaseSpec> select_shard(const std::vector<CaseSpec>& cases, const ShardSpec& s);

// The trace file of a case inside --trace-dir: stable across nights and distinct across shards.
std::string case_trace_name(const CaseSpec& c);

// Single-quotes an argument unless it is plainly safe, so a printed command pastes into a shell.
std::string shell_quote(const std::string& s);

// The `driftscope run` command line that reruns just this case: `argv` (the matrix run's own
// arguments) minus the matrix, shard and output flags, plus the case's model, candidate and seed.
std::string single_case_command(const std::vector<std::string>& argv, const CaseSpec& c);

}  // namespace ds
