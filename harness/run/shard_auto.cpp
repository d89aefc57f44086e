#include "shard_auto.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdlib>
#include <vector>

namespace ds {

namespace {

constexpr std::string_view kSlurmId = "SLURM_ARRAY_TASK_ID", kSlurmCount = "SLURM_ARRAY_TASK_COUNT",
                           kSlurmMin = "SLURM_ARRAY_TASK_MIN", kSlurmMax = "SLURM_ARRAY_TASK_MAX",
                           kSlurmStep = "SLURM_ARRAY_TASK_STEP", kK8sIndex = "JOB_COMPLETION_INDEX",
                           kGitlabIndex = "CI_NODE_INDEX", kGitlabTotal = "CI_NODE_TOTAL";

// A shard failure: the message is complete, resolve_auto_shard prefixes nothing more.
struct Refusal {
  std::string message;
};

// Digits only: a sign, a space or a suffix in a scheduler's variable means it is not what we think.
std::optional<int> parse_count(std::string_view s) {
  int v = 0;
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

class Reader {
 public:
  Reader(const EnvLookup& env, const std::string& spec) : env_(env), spec_(spec) {}

  std::optional<int> optional_int(std::string_view name) {
    const auto v = env_(name);
    if (!v) return std::nullopt;
    const auto n = parse_count(*v);
    if (!n) throw Refusal{fmt::format("--shard {}: {}={} is not a non-negative integer", spec_, name, *v)};
    read_.push_back(fmt::format("{}={}", name, *v));
    return n;
  }
  int required_int(std::string_view name, std::string_view why) {
    if (const auto n = optional_int(name)) return *n;
    throw Refusal{fmt::format("--shard {}: {} is not set{}: {}", spec_, name,
                              read_.empty() ? std::string() : fmt::format(" (but {} is)", evidence()), why)};
  }
  std::string evidence() const { return fmt::format("{}", fmt::join(read_, ", ")); }

 private:
  const EnvLookup& env_;
  const std::string& spec_;
  std::vector<std::string> read_;
};

// A count the scheduler states and one the user gave as auto/N must agree: a job script copied
// from another matrix size would otherwise run the wrong share.
void check_given_count(const std::string& spec, std::optional<int> given, int count,
                       std::string_view source) {
  if (given && *given != count)
    throw Refusal{
        fmt::format("--shard {}: the scheduler says {} shards ({}), not {}", spec, count, source, *given)};
}

AutoShard slurm(const std::string& spec, const EnvLookup& env, std::optional<int> given) {
  Reader r(env, spec);
  const int id = r.required_int(kSlurmId, "Slurm sets it in every task of a job array (sbatch --array)");
  const int count =
      r.required_int(kSlurmCount, "Slurm sets it, with SLURM_ARRAY_TASK_ID, in every task of a job array");
  // Task ids run from the array's first id (--array=1-8 starts at 1), in steps of --array's :STEP.
  const int min = r.optional_int(kSlurmMin).value_or(0);
  const int step = r.optional_int(kSlurmStep).value_or(1);
  const std::optional<int> max = r.optional_int(kSlurmMax);
  const std::string seen = r.evidence();
  if (count < 1) throw Refusal{fmt::format("--shard {}: {}: an array of no task", spec, seen)};
  if (step < 1) throw Refusal{fmt::format("--shard {}: {}: a step below 1", spec, seen)};
  // A list (--array=1,3,7) is not one range: its ids do not map onto 0..count-1.
  if (max && (*max < min || (*max - min) % step != 0 || (*max - min) / step + 1 != count))
    throw Refusal{fmt::format(
        "--shard {}: {}: the array's ids are not one range of {} task(s) from {} in steps of {} (an "
        "--array list?): submit --array=0-{} or give --shard i/N",
        spec, seen, count, min, step, count - 1)};
  if (id < min || (id - min) % step != 0 || (id - min) / step >= count)
    throw Refusal{
        fmt::format("--shard {}: {}: task id {} is not one of the array's {} task(s) from {} in steps of {}",
                    spec, seen, id, count, min, step)};
  check_given_count(spec, given, count, kSlurmCount);
  return {{(id - min) / step, count}, "Slurm job array", seen};
}

AutoShard kubernetes(const std::string& spec, const EnvLookup& env, std::optional<int> given) {
  Reader r(env, spec);
  const int index = *r.optional_int(kK8sIndex);
  const std::string seen = r.evidence();
  // A pod is told its index but not the job's completions.
  if (!given)
    throw Refusal{fmt::format(
        "--shard {}: {} (a Kubernetes Indexed Job) gives the index but not the count: give --shard auto/N "
        "with N the Job's .spec.completions",
        spec, seen)};
  if (index >= *given)
    throw Refusal{
        fmt::format("--shard {}: {} is not below the {} shard(s) of auto/{}", spec, seen, *given, *given)};
  return {{index, *given}, "Kubernetes Indexed Job", seen};
}

AutoShard gitlab(const std::string& spec, const EnvLookup& env, std::optional<int> given) {
  Reader r(env, spec);
  const int index = *r.optional_int(kGitlabIndex);
  const int total =
      r.required_int(kGitlabTotal, "GitLab sets it, with CI_NODE_INDEX, in a job with parallel:");
  const std::string seen = r.evidence();
  // GitLab counts its parallel jobs from 1.
  if (total < 1 || index < 1 || index > total)
    throw Refusal{fmt::format("--shard {}: {}: need 1 <= {} <= {} (GitLab numbers parallel jobs from 1)",
                              spec, seen, kGitlabIndex, kGitlabTotal)};
  check_given_count(spec, given, total, kGitlabTotal);
  return {{index - 1, total}, "GitLab parallel job", seen};
}

std::string none_found(const std::string& spec, const EnvLookup& env) {
  std::string msg = fmt::format(
      "--shard {}: no scheduler's shard in the environment; looked for {} with {} (a Slurm job array), {} "
      "(a Kubernetes Indexed Job, with --shard auto/N), {} with {} (a GitLab parallel job). Elsewhere give "
      "--shard i/N",
      spec, kSlurmId, kSlurmCount, kK8sIndex, kGitlabIndex, kGitlabTotal);
  // The near misses: a scheduler is there, but did not start this job as one share of many.
  if (env("SLURM_JOB_ID")) msg += "; SLURM_JOB_ID is set: a Slurm job, but not an array job (sbatch --array)";
  if (const auto total = env(kGitlabTotal))
    msg += fmt::format("; {}={} is set without {}: a GitLab job without parallel:", kGitlabTotal, *total,
                       kGitlabIndex);
  return msg;
}

}  // namespace

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

bool is_auto_shard(const std::string& spec) { return spec == "auto" || spec.starts_with("auto/"); }

std::optional<AutoShard> resolve_auto_shard(const std::string& spec, const EnvLookup& env,
                                            std::string& error) {
  std::optional<int> given;
  if (spec != "auto") {
    given = spec.starts_with("auto/") ? parse_count(std::string_view(spec).substr(5)) : std::nullopt;
    if (!given || *given < 1) {
      error = fmt::format("--shard {}: expected auto, auto/N (N >= 1 shards) or i/N", spec);
      return std::nullopt;
    }
  }
  struct Scheduler {
    std::string_view name;
    std::vector<std::string_view> markers;  // any one set: the job runs under this scheduler
    AutoShard (*read)(const std::string&, const EnvLookup&, std::optional<int>);
  };
  const Scheduler schedulers[] = {{"Slurm job array", {kSlurmId, kSlurmCount}, slurm},
                                  {"Kubernetes Indexed Job", {kK8sIndex}, kubernetes},
                                  {"GitLab parallel job", {kGitlabIndex}, gitlab}};
  std::vector<const Scheduler*> present;
  std::vector<std::string> markers_set;
  for (const Scheduler& s : schedulers) {
    bool any = false;
    for (std::string_view m : s.markers)
      if (const auto v = env(m)) {
        any = true;
        markers_set.push_back(fmt::format("{}={}", m, *v));
      }
    if (any) present.push_back(&s);
  }
  if (present.empty()) {
    error = none_found(spec, env);
    return std::nullopt;
  }
  if (present.size() > 1) {
    // A GitLab job that submits a Slurm array passes its variables on: which share is meant is
    // a guess, and a wrong guess runs some cases twice and others never.
    std::vector<std::string_view> names;
    for (const Scheduler* s : present) names.push_back(s->name);
    error = fmt::format("--shard {}: the variables of several schedulers are set ({}: {}); give --shard i/N",
                        spec, fmt::join(names, ", "), fmt::join(markers_set, ", "));
    return std::nullopt;
  }
  try {
    return present.front()->read(spec, env, given);
  } catch (const Refusal& r) {
    error = r.message;
    return std::nullopt;
  }
}

}  // namespace ds
