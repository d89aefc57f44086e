#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "console.h"

namespace ds {
namespace {

std::string render(const RunReport& r, ConsoleOptions opt = {}) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  print_report(f, r, opt);
  std::fclose(f);
  std::string s(buf, len);
  std::free(buf);
  return s;
}

// A failing stage of layer 0, step 0 with 3 elements out of tolerance, the first at `first`.
StageResult failing(const char* stage, std::int64_t first, std::int64_t numel, double max_abs) {
  StageResult r;
  r.key = {0, 0, stage};
  r.status = Status::fail;
  r.m.first_mismatch = first;
  r.m.mismatches = 3;
  r.m.numel = numel;
  r.m.max_abs = max_abs;
  return r;
}

TEST(Console, FailureShowsFirstValuesOfBothSidesAndTheFirstFailingStage) {
  RunReport rep;
  StageResult ok;
  ok.key = {0, 0, "attn_norm"};
  StageResult bad = failing("residual_1", 6, 10, 0.05);
  bad.head_ref = {1, 2};
  bad.head_cand = {1, 3};
  rep.results = {ok, bad};
  rep.first_failure = bad;
  rep.verdict = "FAIL: x";
  const std::string s = render(rep);
  EXPECT_NE(s.find("attn_norm"), std::string::npos);
  EXPECT_NE(s.find("FAIL"), std::string::npos);
  EXPECT_NE(s.find("6 (3 of 10)"), std::string::npos);
  EXPECT_NE(s.find("ref[0..2]:  [1, 2]"), std::string::npos);
  EXPECT_NE(s.find("cand[0..2]: [1, 3]"), std::string::npos);
  EXPECT_NE(s.find("First failing stage: residual_1 of layer 0"), std::string::npos);
  EXPECT_NE(s.find("2 stages judged, 1 failed"), std::string::npos);
}

StageResult passing(const char* stage, double max_abs) {
  StageResult r;
  r.key = {0, 0, stage};
  r.m.max_abs = max_abs;
  r.m.atol = 1e-3;
  r.m.numel = 8;
  return r;
}

TEST(Console, APassingRunIsSummarisedNamingTheStageClosestToItsTolerance) {
  RunReport rep;
  rep.results = {passing("attn_norm", 1e-5), passing("down", 8e-4), passing("q", 2e-4)};
  rep.verdict = "PASS: 3 stages within policy";
  const std::string s = render(rep, {false, false, false});
  EXPECT_NE(s.find("All 3 judged stages pass (`--all` prints every row). Closest to its tolerance:"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("down"), std::string::npos);
  EXPECT_EQ(s.find("attn_norm"), std::string::npos) << s;  // no rows
  const std::string all = render(rep, {false, false, true});
  EXPECT_NE(all.find("attn_norm"), std::string::npos);
}

TEST(Console, AnElementwiseFailureSaysWhyAndShowsTheValuesAroundTheFirstMismatch) {
  RunReport rep;
  StageResult bad = failing("attn_norm", 41, 64, 0.02);
  bad.m.max_abs_index = 41;
  bad.m.atol = 1e-5;
  bad.m.rtol = 1e-3;
  bad.head_from = 39;
  bad.head_ref = {1, 2, 3, 4, 5};
  bad.head_cand = {1, 2, 3.1, 4, 5};
  rep.results = {bad};
  rep.first_failure = bad;
  const std::string s = render(rep, {false, false, false});
  EXPECT_NE(
      s.find("why: 3 of 64 elements outside atol 1e-05 + rtol 0.001 x |ref|; max |diff| 2.000e-02 at flat "
             "index 41"),
      std::string::npos)
      << s;
  EXPECT_NE(s.find("ref[39..44]:  [1, 2, 3, 4, 5]"), std::string::npos) << s;
  EXPECT_NE(s.find("first_mismatch: the flat index of the first element outside that row's tolerance"),
            std::string::npos);
}

}  // namespace
}  // namespace ds
