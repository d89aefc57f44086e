// `--shard auto`: the shard a job runs, read from the scheduler that started it, so one job script
// serves every task of a Slurm array, a Kubernetes Indexed Job or a GitLab parallel job.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "matrix.h"

namespace ds {

// An environment variable's value, or nullopt when it is not set. Passed in so that the parsing is
// tested with made-up environments.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The process's own environment.
EnvLookup process_environment();

// Whether a --shard value asks for the scheduler's shard: "auto" or "auto/N".
bool is_auto_shard(const std::string& spec);

struct AutoShard {
  ShardSpec shard;
  std::string scheduler;  // "Slurm job array", "Kubernetes Indexed Job", "GitLab parallel job"
  std::string evidence;   // the variables read, NAME=VALUE, comma separated
};

// The shard of `spec` ("auto", or "auto/N" where the scheduler does not say the count) from the
// environment. nullopt, with `error` naming the variables looked for or the ones that disagree, when
// no scheduler's variables are set, when several schedulers' are, or when they are malformed or
// inconsistent (an index outside the count, a count other than N, a Slurm array that is not one
// contiguous range).
std::optional<AutoShard> resolve_auto_shard(const std::string& spec, const EnvLookup& env,
                                            std::string& error);

}  // namespace ds
