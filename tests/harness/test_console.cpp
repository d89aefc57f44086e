#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "console.h"

namespace ds {
namespace {

std::string render(const RunReport& r) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  print_report(f, r, {});
  std::fclose(f);
  std::string s(buf, len);
  std::free(buf);
  return s;
}

TEST(Console, FailureShowsFirstValuesOfBothSidesAndTheFirstFailingStage) {
  RunReport rep;
  StageResult ok;
  ok.key = {0, 0, "attn_norm"};
  StageResult bad;
  bad.key = {0, 0, "residual_1"};
  bad.status = Status::fail;
  bad.m.first_mismatch = 6;
  bad.m.mismatches = 3;
  bad.m.numel = 10;
  bad.m.max_abs = 0.05;
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

}  // namespace
}  // namespace ds
