// The runner: load, gate, then for every model step and layer run the reference and the
// candidate side by side, compare every stage, stream the results into the trace.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

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
};

// A gate refused the run before any compute: exit 3.
struct GateRefusal : std::runtime_error {
  GateRefusal(std::string report) : std::runtime_error(report) {}
};

struct RunReport {
  std::string model, candidate;
  std::string policy;  // the policy's name
  std::vector<StageResult> results;  // execution order
  std::optional<StageResult> first_failure;
  std::vector<int> tokens;  // prompt + decode tokens fed to both sides
  int exit_code = kExitParity;
  std::string verdict;  // one sentence
};

// Loads `spec` (synthetic:<preset> for now) or throws InputError.
Model load_model_spec(const std::string& spec, std::uint64_t seed, int layers);
// The ops a model needs (from its configuration).
OpSet required_ops(const ModelConfig& cfg);

RunReport run_parity(const RunOptions& opt, const Policy& policy);

// Sets first_failure, exit_code and verdict from `results` (a run that judged no stage fails:
// "0 of 0 passed" is not parity). Shared by `run` and `report`.
void conclude(RunReport& report);

}  // namespace ds
