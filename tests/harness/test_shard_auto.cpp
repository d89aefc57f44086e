// `--shard auto`: the shard read from each scheduler's variables, and every environment it must
// refuse (none, several schedulers, malformed or inconsistent values) with a message naming them.
#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "shard_auto.h"

namespace ds {
namespace {

struct Case {
  std::string name;  // the test's name: what the environment is
  std::string spec;  // --shard's value
  std::map<std::string, std::string> env;
  // Accepted: the shard and the scheduler named. Refused: words the error must contain.
  std::optional<ShardSpec> want;
  std::string scheduler;
  std::vector<std::string> error_names;
};

// ctest lists each case by its name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Case accepts(std::string name, std::string spec, std::map<std::string, std::string> env, ShardSpec want,
             std::string scheduler) {
  return {std::move(name), std::move(spec), std::move(env), want, std::move(scheduler), {}};
}

Case refuses(std::string name, std::string spec, std::map<std::string, std::string> env,
             std::vector<std::string> error_names) {
  return {std::move(name), std::move(spec), std::move(env), std::nullopt, "", std::move(error_names)};
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // Slurm job arrays.
      accepts("SlurmArrayFromZero", "auto",
              {{"SLURM_ARRAY_TASK_ID", "2"},
               {"SLURM_ARRAY_TASK_COUNT", "4"},
               {"SLURM_ARRAY_TASK_MIN", "0"},
               {"SLURM_ARRAY_TASK_MAX", "3"}},
              {2, 4}, "Slurm job array"),
      accepts("SlurmArrayFromOneIsShiftedByItsMin", "auto",
              {{"SLURM_ARRAY_TASK_ID", "1"},
               {"SLURM_ARRAY_TASK_COUNT", "8"},
               {"SLURM_ARRAY_TASK_MIN", "1"},
               {"SLURM_ARRAY_TASK_MAX", "8"}},
              {0, 8}, "Slurm job array"),
      accepts(
          "SlurmArrayLastTask", "auto",
          {{"SLURM_ARRAY_TASK_ID", "12"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "10"}},
          {2, 3}, "Slurm job array"),
      accepts("SlurmArrayWithAStep", "auto",
              {{"SLURM_ARRAY_TASK_ID", "8"},
               {"SLURM_ARRAY_TASK_COUNT", "4"},
               {"SLURM_ARRAY_TASK_MIN", "0"},
               {"SLURM_ARRAY_TASK_MAX", "12"},
               {"SLURM_ARRAY_TASK_STEP", "4"}},
              {2, 4}, "Slurm job array"),
      accepts("SlurmWithoutMinCountsFromZero", "auto",
              {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "1"}}, {0, 1}, "Slurm job array"),
      accepts("SlurmWithTheSameCountGiven", "auto/4",
              {{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"}},
              {3, 4}, "Slurm job array"),
      refuses("SlurmCountDisagreesWithAutoN", "auto/5",
              {{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
              {"SLURM_ARRAY_TASK_COUNT", "not 5"}),
      refuses("SlurmIdWithoutCount", "auto", {{"SLURM_ARRAY_TASK_ID", "3"}}, {"SLURM_ARRAY_TASK_COUNT"}),
      refuses("SlurmCountWithoutId", "auto", {{"SLURM_ARRAY_TASK_COUNT", "4"}}, {"SLURM_ARRAY_TASK_ID"}),
      refuses("SlurmIdNotANumber", "auto", {{"SLURM_ARRAY_TASK_ID", "x1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
              {"SLURM_ARRAY_TASK_ID=x1"}),
      refuses("SlurmIdNegative", "auto", {{"SLURM_ARRAY_TASK_ID", "-1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
              {"SLURM_ARRAY_TASK_ID=-1"}),
      refuses("SlurmIdWithASpace", "auto", {{"SLURM_ARRAY_TASK_ID", " 1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
              {"SLURM_ARRAY_TASK_ID= 1"}),
      refuses("SlurmCountZero", "auto", {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "0"}},
              {"SLURM_ARRAY_TASK_COUNT=0"}),
      refuses("SlurmIdBelowItsMin", "auto",
              {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"}},
              {"task id 0", "SLURM_ARRAY_TASK_MIN=1"}),
      refuses("SlurmIdPastTheCount", "auto", {{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
              {"task id 4", "SLURM_ARRAY_TASK_COUNT=4"}),
      refuses("SlurmArrayListIsNotOneRange", "auto",
              {{"SLURM_ARRAY_TASK_ID", "3"},
               {"SLURM_ARRAY_TASK_COUNT", "3"},
               {"SLURM_ARRAY_TASK_MIN", "1"},
               {"SLURM_ARRAY_TASK_MAX", "7"}},
              {"SLURM_ARRAY_TASK_MAX=7", "not one range"}),
      refuses("SlurmIdOffTheStep", "auto",
              {{"SLURM_ARRAY_TASK_ID", "5"},
               {"SLURM_ARRAY_TASK_COUNT", "4"},
               {"SLURM_ARRAY_TASK_MIN", "0"},
               {"SLURM_ARRAY_TASK_MAX", "12"},
               {"SLURM_ARRAY_TASK_STEP", "4"}},
              {"task id 5", "steps of 4"}),
      // Kubernetes Indexed Jobs: the index from the pod, the count from auto/N.
      accepts("KubernetesIndexWithCount", "auto/3", {{"JOB_COMPLETION_INDEX", "2"}}, {2, 3},
              "Kubernetes Indexed Job"),
      accepts("KubernetesFirstIndex", "auto/1", {{"JOB_COMPLETION_INDEX", "0"}}, {0, 1},
              "Kubernetes Indexed Job"),
      refuses("KubernetesWithoutCount", "auto", {{"JOB_COMPLETION_INDEX", "2"}},
              {"JOB_COMPLETION_INDEX=2", "auto/N", ".spec.completions"}),
      refuses("KubernetesIndexPastCount", "auto/3", {{"JOB_COMPLETION_INDEX", "3"}},
              {"JOB_COMPLETION_INDEX=3", "auto/3"}),
      refuses("KubernetesIndexMalformed", "auto/3", {{"JOB_COMPLETION_INDEX", "1.0"}},
              {"JOB_COMPLETION_INDEX=1.0"}),
      // GitLab parallel jobs: 1-based.
      accepts("GitlabFirstNodeIsShardZero", "auto", {{"CI_NODE_INDEX", "1"}, {"CI_NODE_TOTAL", "5"}}, {0, 5},
              "GitLab parallel job"),
      accepts("GitlabLastNode", "auto", {{"CI_NODE_INDEX", "5"}, {"CI_NODE_TOTAL", "5"}}, {4, 5},
              "GitLab parallel job"),
      refuses("GitlabNodeZeroIsNotOneBased", "auto", {{"CI_NODE_INDEX", "0"}, {"CI_NODE_TOTAL", "5"}},
              {"CI_NODE_INDEX=0", "from 1"}),
      refuses("GitlabNodePastTotal", "auto", {{"CI_NODE_INDEX", "6"}, {"CI_NODE_TOTAL", "5"}},
              {"CI_NODE_INDEX=6", "CI_NODE_TOTAL=5"}),
      refuses("GitlabIndexWithoutTotal", "auto", {{"CI_NODE_INDEX", "2"}}, {"CI_NODE_TOTAL"}),
      refuses("GitlabTotalDisagreesWithAutoN", "auto/4", {{"CI_NODE_INDEX", "2"}, {"CI_NODE_TOTAL", "5"}},
              {"CI_NODE_TOTAL", "not 4"}),
      // No scheduler, several, or a malformed spec.
      refuses("NoSchedulerNamesEveryVariableLookedFor", "auto", {},
              {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "JOB_COMPLETION_INDEX", "CI_NODE_INDEX",
               "CI_NODE_TOTAL", "--shard i/N"}),
      refuses("PlainSlurmJobIsNotAnArray", "auto", {{"SLURM_JOB_ID", "77"}},
              {"SLURM_JOB_ID", "sbatch --array"}),
      refuses("GitlabJobWithoutParallel", "auto", {{"CI_NODE_TOTAL", "1"}},
              {"CI_NODE_TOTAL=1", "without parallel"}),
      refuses("TwoSchedulersAreAmbiguous", "auto",
              {{"SLURM_ARRAY_TASK_ID", "1"},
               {"SLURM_ARRAY_TASK_COUNT", "2"},
               {"CI_NODE_INDEX", "1"},
               {"CI_NODE_TOTAL", "2"}},
              {"several schedulers", "SLURM_ARRAY_TASK_ID=1", "CI_NODE_INDEX=1"}),
      refuses("AutoWithZeroShards", "auto/0", {{"JOB_COMPLETION_INDEX", "0"}}, {"auto/0"}),
      refuses("AutoWithMalformedCount", "auto/x", {{"JOB_COMPLETION_INDEX", "0"}}, {"auto/x"}),
  };
  return all;
}

class AutoShardTable : public testing::TestWithParam<Case> {};

TEST_P(AutoShardTable, ReadsOrRefuses) {
  const Case& c = GetParam();
  const EnvLookup env = [&](std::string_view name) -> std::optional<std::string> {
    const auto it = c.env.find(std::string(name));
    if (it == c.env.end()) return std::nullopt;
    return it->second;
  };
  std::string error;
  const auto got = resolve_auto_shard(c.spec, env, error);
  if (c.want) {
    ASSERT_TRUE(got) << error;
    EXPECT_EQ(got->shard.index, c.want->index);
    EXPECT_EQ(got->shard.count, c.want->count);
    EXPECT_EQ(got->scheduler, c.scheduler);
    // What was read is printed: every variable of the case that the scheduler's reader uses.
    for (const auto& [name, value] : c.env)
      EXPECT_NE(got->evidence.find(name + "=" + value), std::string::npos) << got->evidence;
  } else {
    ASSERT_FALSE(got) << "read shard " << got->shard.str() << " from " << got->evidence;
    EXPECT_NE(error.find("--shard " + c.spec), std::string::npos) << error;
    for (const std::string& word : c.error_names) EXPECT_NE(error.find(word), std::string::npos) << error;
  }
}

INSTANTIATE_TEST_SUITE_P(Environments, AutoShardTable, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(AutoShard, OnlyAutoSpecsAreAuto) {
  EXPECT_TRUE(is_auto_shard("auto"));
  EXPECT_TRUE(is_auto_shard("auto/4"));
  EXPECT_TRUE(is_auto_shard("auto/x"));  // refused by resolve_auto_shard, naming it
  EXPECT_FALSE(is_auto_shard("0/4"));
  EXPECT_FALSE(is_auto_shard(""));
  EXPECT_FALSE(is_auto_shard("automatic"));
}

}  // namespace
}  // namespace ds
