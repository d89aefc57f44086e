// history show's trend rules on made-up nights: which series creep (a table of named cases), the
// first failed night, and an unfinished night that is never a pass.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "history_show.h"
#include "history_trend.h"

namespace ds {
namespace {

using Ratios = std::vector<std::optional<double>>;

struct CreepCase {
  std::string name;
  Ratios ratios;
  std::vector<std::string> statuses;  // empty: "pass" every night
  bool creeping;
};

// ctest lists each case by its name, not its bytes.
void PrintTo(const CreepCase& c, std::ostream* os) { *os << c.name; }

const std::vector<CreepCase>& creep_cases() {
  static const std::vector<CreepCase> all = {
      {"DoublesSteadily", {2, 3, 4.5, 7}, {}, true},
      {"ExactlyTwiceIsEnough", {1, 1.5, 2}, {}, true},
      {"SmallDipWithinSlack", {1, 2, 1.85, 3}, {}, true},
      {"DipBelowSlackIsNotSteady", {1, 2, 1.7, 3}, {}, false},
      {"RiseUnderTwice", {2, 2.5, 3, 3.9}, {}, false},
      {"TwoNightsAreTooFew", {1, 5}, {}, false},
      {"GapsAreSkipped", {1, std::nullopt, 1.6, std::nullopt, 2.5}, {}, true},
      {"TooFewNightsWithValues", {1, std::nullopt, std::nullopt, 3}, {}, false},
      {"BelowTheFloorIsNotCreeping", {0.1, 0.2, 0.4, 0.8}, {}, false},
      {"FailedNightIsNotStillPassing", {1, 2, 4, 6}, {"pass", "pass", "fail", "pass"}, false},
      {"FailingLastNight", {1, 2, 4, 30}, {"pass", "pass", "pass", "fail"}, false},
      {"UnfinishedNightIsAGap", {1, 1.5, 9, 2.5}, {"pass", "pass", "incomplete", "pass"}, true},
      {"AbsentNightIsAGap", {1, 1.5, std::nullopt, 2.5}, {"pass", "pass", "", "pass"}, true},
      {"FilledNightsDoNotFail", {1, 1.5, 2.5}, {"pass", "filled", "pass"}, true},
      {"ExactFirstNightHasNoRatioToRiseFrom", {0, 1, 2, 3}, {}, false},
      {"Falling", {4, 3, 2, 1}, {}, false},
      {"Flat", {3, 3, 3, 3}, {}, false},
  };
  return all;
}

class Creeping : public testing::TestWithParam<CreepCase> {};

TEST_P(Creeping, FollowsTheRule) {
  const CreepCase& c = GetParam();
  std::vector<std::string> statuses = c.statuses;
  if (statuses.empty()) statuses.assign(c.ratios.size(), "pass");
  EXPECT_EQ(is_creeping(c.ratios, statuses), c.creeping);
}

INSTANTIATE_TEST_SUITE_P(Series, Creeping, testing::ValuesIn(creep_cases()),
                         [](const testing::TestParamInfo<CreepCase>& info) { return info.param.name; });

StoredCase night(std::size_t n, std::string outcome, std::vector<StageRecord> stages) {
  StoredCase sc;
  sc.night = n;
  sc.record.model = "synthetic:qwen2-tiny";
  sc.record.candidate = "simt";
  sc.record.outcome = std::move(outcome);
  sc.record.verdict = sc.record.outcome;
  sc.record.stages = std::move(stages);
  return sc;
}

TEST(HistoryView, UnfinishedNightFailsTheCaseButNotItsStages) {
  const std::vector<NightInfo> nights = {{"n1", ""}, {"n2", ""}, {"n3", ""}};
  const std::vector<StoredCase> cases = {
      night(0, "pass", {{"q", 0, "isolated", "pass", 1.0, 0}}),
      night(1, "pass", {{"q", 0, "isolated", "pass", 1.5, 0}}),
      night(2, "incomplete", {{"q", 0, "isolated", "pass", 2.5, 0}}),
  };
  const HistoryView v = build_history_view(nights, cases, std::nullopt);
  ASSERT_EQ(v.cases.size(), 1u);
  const CaseTrend& c = v.cases[0];
  EXPECT_EQ(c.first_failed, std::optional<std::size_t>(2));
  ASSERT_EQ(c.stages.size(), 1u);
  const Series& q = c.stages[0].worst;
  EXPECT_EQ(q.status, (std::vector<std::string>{"pass", "pass", "incomplete"}));
  EXPECT_FALSE(q.first_failed);
  // Two finished nights and an unfinished one: too few to call a rise steady.
  EXPECT_FALSE(c.stages[0].creeping());
}

TEST(HistoryView, WorstLayerAndFirstFailureAcrossLayers) {
  const std::vector<NightInfo> nights = {{"n1", ""}, {"n2", ""}};
  const std::vector<StoredCase> cases = {
      night(0, "pass", {{"down", 0, "chained", "pass", 1.0, 0}, {"down", 1, "chained", "pass", 3.0, 1}}),
      night(1, "fail", {{"down", 0, "chained", "fail", 12.0, 0}, {"down", 1, "chained", "pass", 2.0, 1}}),
  };
  const HistoryView v = build_history_view(nights, cases, std::nullopt);
  const StageTrend& down = v.cases.at(0).stages.at(0);
  EXPECT_EQ(down.worst.ratio, (Ratios{3.0, 12.0}));
  EXPECT_EQ(down.worst.status, (std::vector<std::string>{"pass", "fail"}));
  EXPECT_EQ(down.worst.first_failed, std::optional<std::size_t>(1));
  EXPECT_EQ(down.layers.at(1).series.first_failed, std::nullopt);
  EXPECT_EQ(v.cases[0].first_failed, std::optional<std::size_t>(1));
}

TEST(HistoryView, WindowKeepsTheLastNights) {
  const std::vector<NightInfo> nights = {{"n1", ""}, {"n2", ""}, {"n3", ""}, {"n4", ""}};
  std::vector<StoredCase> cases;
  for (std::size_t n = 0; n < 4; ++n)
    cases.push_back(night(n, "pass", {{"q", 0, "isolated", "pass", 1.0 + n, 0}}));
  const HistoryView v = build_history_view(nights, cases, 2);
  ASSERT_EQ(v.nights.size(), 2u);
  EXPECT_EQ(v.nights[0].label, "n3");
  EXPECT_EQ(v.cases.at(0).stages.at(0).worst.ratio, (Ratios{3.0, 4.0}));
}

TEST(Sparkline, LogScaleWithGaps) {
  EXPECT_EQ(sparkline({1.0, 10.0, std::nullopt, 100.0}), "▁▅ █");
  EXPECT_EQ(sparkline({2.0, 2.0}), "▄▄");  // flat: mid-height
  EXPECT_EQ(sparkline({0.0, 1.0, 4.0}), "▁▁█");
}

}  // namespace
}  // namespace ds
