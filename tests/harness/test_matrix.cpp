// The case matrix and `--shard i/N`: every case runs in exactly one shard, shards stay balanced,
// and a malformed spec is refused.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "matrix.h"

namespace ds {
namespace {

std::vector<std::string> names(const char* prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

TEST(Matrix, EnumeratesModelMajorThenCandidateThenSeed) {
  const auto cases = enumerate_cases({"m0", "m1"}, {"c0", "c1"}, {7, 9});
  ASSERT_EQ(cases.size(), 8u);
  const std::vector<std::tuple<std::string, std::string, std::uint64_t>> want = {
      {"m0", "c0", 7}, {"m0", "c0", 9}, {"m0", "c1", 7}, {"m0", "c1", 9},
      {"m1", "c0", 7}, {"m1", "c0", 9}, {"m1", "c1", 7}, {"m1", "c1", 9}};
  for (std::size_t k = 0; k < cases.size(); ++k) {
    EXPECT_EQ(cases[k].index, int(k));
    EXPECT_EQ(cases[k].of, 8);
    EXPECT_EQ(std::tuple(cases[k].model, cases[k].candidate, cases[k].seed), want[k]);
  }
  EXPECT_EQ(cases[3].key(), "m0 x c1 x seed 9");
  EXPECT_EQ(case_trace_name(cases[3]), "case-3-of-8.h5");
}

TEST(Matrix, EveryCaseRunsInExactlyOneShardAndShardsAreBalanced) {
  struct Dims {
    int models, candidates, seeds, shards;
  };
  for (const Dims d : {Dims{1, 1, 1, 1}, Dims{1, 2, 2, 2}, Dims{3, 2, 1, 4}, Dims{2, 3, 5, 7},
                       Dims{1, 1, 3, 5}, Dims{4, 1, 1, 4}, Dims{2, 2, 2, 3}}) {
    const auto all = enumerate_cases(names("m", d.models), names("c", d.candidates),
                                     std::vector<std::uint64_t>(std::size_t(d.seeds), 0));
    const int m = d.models * d.candidates * d.seeds;
    ASSERT_EQ(int(all.size()), m);
    std::map<int, int> runs;  // case index -> how many shards ran it
    std::size_t smallest = all.size(), largest = 0;
    for (int i = 0; i < d.shards; ++i) {
      const auto mine = select_shard(all, {i, d.shards});
      smallest = std::min(smallest, mine.size());
      largest = std::max(largest, mine.size());
      for (const auto& c : mine) {
        ++runs[c.index];
        EXPECT_EQ(c.index % d.shards, i);
      }
    }
    SCOPED_TRACE(testing::Message() << m << " cases over " << d.shards << " shards");
    EXPECT_EQ(int(runs.size()), m);
    for (const auto& [k, n] : runs) EXPECT_EQ(n, 1) << "case " << k;
    EXPECT_LE(largest - smallest, 1u);
  }
}

TEST(Matrix, ShardBeyondTheMatrixSelectsNothing) {
  const auto all = enumerate_cases({"m"}, {"c"}, {1, 2});
  EXPECT_TRUE(select_shard(all, {3, 4}).empty());
  EXPECT_EQ(select_shard(all, {1, 4}).size(), 1u);
}

TEST(Matrix, ParsesShardSpecs) {
  std::string err;
  const auto s = parse_shard("3/8", err);
  ASSERT_TRUE(s) << err;
  EXPECT_EQ(s->index, 3);
  EXPECT_EQ(s->count, 8);
  EXPECT_EQ(s->str(), "3/8");
  for (const char* bad :
       {"3/2", "2/2", "a/b", "1/0", "0/0", "-1/2", "1", "/2", "1/", "1/2/3", " 1/2", "1/2x"}) {
    err.clear();
    EXPECT_FALSE(parse_shard(bad, err)) << bad;
    EXPECT_NE(err.find(bad), std::string::npos) << "the error names the spec: " << err;
  }
}

TEST(Matrix, SingleCaseCommandDropsMatrixFlagsAndNamesTheCase) {
  const std::vector<std::string> argv = {"/opt/driftscope",
                                         "run",
                                         "--model",
                                         "a",
                                         "-m",
                                         "b",
                                         "--candidate",
                                         "cpu-f16",
                                         "--seed=1",
                                         "--seed",
                                         "2",
                                         "--shard",
                                         "0/2",
                                         "--mode",
                                         "both",
                                         "--trace-dir",
                                         "out dir",
                                         "--junit",
                                         "j.xml",
                                         "--prompt-tokens",
                                         "4"};
  const CaseSpec c{3, 4, "b", "cpu-f16", 2};
  EXPECT_EQ(single_case_command(argv, c),
            "/opt/driftscope run --mode both --prompt-tokens 4 --model b --candidate cpu-f16 --seed 2");
  const CaseSpec odd{0, 1, "my model.gguf", "it's", 0};
  EXPECT_EQ(single_case_command({"driftscope", "run"}, odd),
            "driftscope run --model 'my model.gguf' --candidate 'it'\\''s' --seed 0");
}

}  // namespace
}  // namespace ds
