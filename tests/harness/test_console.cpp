#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "console.h"
#include "stage_catalog.h"

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

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}
std::size_t count_lines_with(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (const auto& l : lines_of(s)) n += l.find(what) != std::string::npos;
  return n;
}

StageResult row(int layer, const char* stage, Mode mode, Status status) {
  StageResult r;
  r.key = {0, layer, stage};
  r.mode = mode;
  r.status = status;
  r.shape = {4, 16};
  r.m.numel = 64;
  r.m.atol = 1e-3;
  if (status == Status::fail) {
    r.m.first_mismatch = 5;
    r.m.mismatches = 2;
    r.m.max_abs = 0.5;
    r.m.max_abs_index = 7;
  }
  return r;
}

// A --mode both run of `layers` layers whose layer-0 residual_1 fails locally and every later
// chained stage inherits it; `filled` more rows the reference fill computed.
RunReport mutant_like(int layers, int filled = 0) {
  RunReport rep;
  const char* stages[] = {"attn_norm", "q", "k", "v", "attn", "residual_1", "ffn_norm", "down", "residual_2"};
  for (int layer = 0; layer < layers; ++layer)
    for (Mode mode : {Mode::isolated, Mode::chained})
      for (const char* st : stages) {
        const bool local = layer == 0 && std::string(st) == "residual_1";
        const bool after = layer > 0 || std::string(st) == "ffn_norm" || std::string(st) == "down" ||
                           std::string(st) == "residual_2";
        rep.results.push_back(
            row(layer, st, mode, local || (mode == Mode::chained && after) ? Status::fail : Status::pass));
      }
  for (int i = 0; i < filled; ++i) rep.results.push_back(row(0, "gate", Mode::isolated, Status::filled));
  rep.first_failure = rep.results[5];
  rep.first_failure->head_from = 3;
  rep.first_failure->head_ref = {1, 2, 3, 4, 5};
  rep.first_failure->head_cand = {1, 2, 9, 4, 5};
  rep.modes = {Mode::isolated, Mode::chained};
  rep.verdict = "FAIL: first failing stage is residual_1 of layer 0 at step 0 (fail, isolated)";
  return rep;
}

struct LayoutCase {
  const char* name;
  int layers, filled;
  bool all_rows;
  std::size_t collapsed_lines;  // lines standing for inherited rows
  bool every_inherited_row;     // each inherited row printed on its own
};
void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }
class ConsoleLayout : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(ConsoleLayout, LeadsWithTheCauseAndCollapsesInheritedAndFilledRows) {
  const LayoutCase& c = GetParam();
  const RunReport rep = mutant_like(c.layers, c.filled);
  const std::string s = render(rep, {false, false, c.all_rows});
  const auto lines = lines_of(s);
  // The cause, its why and its values come before any table, within the first 10 lines.
  std::size_t cause = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("First failing stage: residual_1 of layer 0 at step 0 (isolated mode)", 0) == 0)
      cause = i;
  EXPECT_LT(cause, 10u) << s;
  EXPECT_NE(s.find("cand[3..8]: [1, 2, 9, 4, 5]"), std::string::npos) << s;
  EXPECT_EQ(count_lines_with(s, "chained row(s) inherited"), c.collapsed_lines) << s;
  const std::size_t chained_fail_rows = count_lines_with(s, " chained  FAIL");
  if (c.every_inherited_row) {
    EXPECT_GT(chained_fail_rows, c.collapsed_lines) << s;
  } else {
    EXPECT_EQ(chained_fail_rows, 1u) << s;  // layer 0's chained residual_1 fails locally: listed
  }
  EXPECT_EQ(count_lines_with(s, "FILLED"), c.all_rows ? std::size_t(c.filled) : 0u) << s;
  if (c.filled && !c.all_rows) {
    EXPECT_NE(s.find(fmt::format("{} filled by the reference", c.filled)), std::string::npos) << s;
  }
  EXPECT_NE(s.find("step layer  stage"), std::string::npos) << s;  // the table has its header
}

INSTANTIATE_TEST_SUITE_P(Rows, ConsoleLayout,
                         ::testing::Values(LayoutCase{"two_layers", 2, 0, false, 2, false},
                                           LayoutCase{"twelve_layers_one_line_each", 12, 0, false, 12, false},
                                           LayoutCase{"filled_rows_counted", 2, 40, false, 2, false},
                                           LayoutCase{"all_lists_every_row", 2, 3, true, 0, true}),
                         [](const auto& info) { return std::string(info.param.name); });

// run --only-failures (issue 49, item 4): without it a failing run's table lists the passing rows
// that lead to the first failure in its block too (step 0, layer 0, isolated: the five stages
// before residual_1); with it, failing rows alone. Other passing rows are counted either way.
struct FailuresOnlyCase {
  const char* name;
  bool only_failures, all_rows;
  std::size_t passing_rows;  // " isolated PASS" lines in the table
};
void PrintTo(const FailuresOnlyCase& c, std::ostream* os) { *os << c.name; }
class ConsoleOnlyFailures : public ::testing::TestWithParam<FailuresOnlyCase> {};

TEST_P(ConsoleOnlyFailures, ListsTheFirstFailingBlocksPassingRowsUnlessAskedForFailuresOnly) {
  const FailuresOnlyCase& c = GetParam();
  const std::string s = render(mutant_like(2), {c.only_failures, false, c.all_rows});
  EXPECT_EQ(count_lines_with(s, " isolated PASS"), c.passing_rows) << s;
  EXPECT_EQ(count_lines_with(s, "   0     0  residual_1   isolated FAIL"), 1u) << s;
}

INSTANTIATE_TEST_SUITE_P(Rows, ConsoleOnlyFailures,
                         ::testing::Values(FailuresOnlyCase{"default_lists_the_stages_before_it", false,
                                                            false, 5},
                                           FailuresOnlyCase{"only_failures", true, false, 0},
                                           FailuresOnlyCase{"all_lists_every_passing_row", false, true, 17},
                                           FailuresOnlyCase{"all_with_only_failures", true, true, 0}),
                         [](const auto& info) { return std::string(info.param.name); });

struct MismatchCase {
  const char* name;
  std::int64_t first_mismatch, first_nan, max_abs_index;
  Status status;
  const char* column;    // the first_mismatch column says
  const char* evidence;  // the cause block says
};
void PrintTo(const MismatchCase& c, std::ostream* os) { *os << c.name; }
class ConsoleMismatch : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(ConsoleMismatch, AFailingRowIsShownByAnElementItHas) {
  const MismatchCase& c = GetParam();
  RunReport rep;
  StageResult r = row(1, "residual_1", Mode::isolated, c.status);
  r.m.first_mismatch = c.first_mismatch;
  r.m.mismatches = c.first_mismatch >= 0 ? 4 : 0;
  r.m.first_nan = c.first_nan;
  r.m.nan_cand = c.first_nan >= 0 ? 1 : 0;
  r.m.max_abs_index = c.max_abs_index;
  r.m.max_abs = 0.25;
  r.note = "rms 0.12 is 21.8x the f16 noise floor's rms 0.0055 (limit 2x)";
  rep.results = {r};
  rep.first_failure = r;
  const std::string s = render(rep, {false, false, false});
  EXPECT_EQ(s.find("-1 (0 of"), std::string::npos) << s;
  EXPECT_NE(s.find(c.column), std::string::npos) << s;
  EXPECT_NE(s.find(c.evidence), std::string::npos) << s;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, ConsoleMismatch,
    ::testing::Values(
        MismatchCase{"elementwise", 9, -1, 12, Status::fail, "9 (4 of 64)",
                     "first mismatch at flat index 9 = [0, 9] of [4, 16]"},
        MismatchCase{"statistical_limit", -1, -1, 37, Status::fail, "none outside; max at 37 (0 of 64)",
                     "the largest difference, 2.500e-01, is at flat index 37 = [2, 5] of [4, 16]"},
        MismatchCase{"nan_only", -1, 20, 3, Status::nan, "NaN at 20", "first NaN at flat index 20 = [1, 4]"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Console, APassingRunsClosestRowHasItsColumnHeader) {
  RunReport rep;
  rep.results = {passing("attn_norm", 1e-5), passing("down", 8e-4)};
  rep.verdict = "PASS";
  const auto lines = lines_of(render(rep, {false, false, false}));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[1].find("step layer  stage"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("down"), std::string::npos) << lines[2];
}

struct DriftLineCase {
  const char* name;
  bool chained;
  const char* drift;
  const char* expect;
};
void PrintTo(const DriftLineCase& c, std::ostream* os) { *os << c.name; }
class ConsoleDrift : public ::testing::TestWithParam<DriftLineCase> {};

TEST_P(ConsoleDrift, SaysWhetherDriftWasChecked) {
  RunReport rep;
  rep.results = {passing("attn_norm", 1e-5)};
  if (GetParam().chained) rep.results.push_back(row(0, "attn_norm", Mode::chained, Status::pass));
  rep.drift = GetParam().drift;
  rep.verdict = "PASS: 1 stages within policy";
  const std::string s = render(rep, {false, false, false});
  EXPECT_NE(s.find(GetParam().expect), std::string::npos) << s;
  if (!GetParam().chained) {
    EXPECT_EQ(s.find("No drift"), std::string::npos) << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ConsoleDrift,
                         ::testing::Values(DriftLineCase{"isolated_only", false, "",
                                                         "drift across layers was NOT checked"},
                                           DriftLineCase{"chained", true, "No drift: the chained error ...",
                                                         "No drift: the chained"}),
                         [](const auto& info) { return std::string(info.param.name); });

struct TieCase {
  const char* name;
  int disagreements;
  bool logits_fail;
  const char* expect;
  const char* absent;
};
void PrintTo(const TieCase& c, std::ostream* os) { *os << c.name; }
class ConsoleTies : public ::testing::TestWithParam<TieCase> {};

TEST_P(ConsoleTies, ANearTieInTopOneAgreementIsNamed) {
  const TieCase& c = GetParam();
  RunReport rep;
  StageResult logits =
      row(kModelLayer, "logits", Mode::isolated, c.logits_fail ? Status::fail : Status::pass);
  rep.results = {logits};
  if (c.logits_fail) rep.first_failure = logits;
  LaneLogits l;
  l.min_top1 = c.disagreements ? 0.75 : 1.0;
  l.disagreements = c.disagreements;
  l.max_disagree_margin = 3.1e-4;
  rep.logits = {l};
  const std::string s = render(rep, {false, false, false});
  EXPECT_NE(s.find(c.expect), std::string::npos) << s;
  EXPECT_EQ(s.find(c.absent), std::string::npos) << s;
}

INSTANTIATE_TEST_SUITE_P(
    Logits, ConsoleTies,
    ::testing::Values(
        TieCase{"agree", 0, false, "top-1 agreement 100.0%,", "near-tie"},
        TieCase{"near_tie_within_policy", 1, false,
                "top-1 agreement 75.0% (the 1 disagreement is a near-tie: the reference's top-1 logit "
                "and the candidate's pick are within 0.00031 of each other",
                "row(s) disagree"},
        TieCase{"wrong_token_logits_fail", 1, true, "top-1 agreement 75.0% (1 row(s) disagree)", "near-tie"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ds
