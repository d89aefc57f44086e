#include <gtest/gtest.h>

#include <string>

#include "bisect.h"

namespace ds {
namespace {

StageResult res(int layer, const char* stage, Mode mode, Status status) {
  StageResult r;
  r.key = {0, layer, stage};
  r.mode = mode;
  r.status = status;
  return r;
}

TEST(Bisect, CulpritIsTheFirstLocalFailureNotTheFirstInExecutionOrder) {
  std::vector<StageResult> rs = {
      res(0, "attn_out", Mode::isolated, Status::pass), res(0, "attn_out", Mode::chained, Status::fail),
      res(1, "q_norm", Mode::isolated, Status::fail), res(1, "q_norm", Mode::chained, Status::fail)};
  const auto c = find_culprit(rs);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->key.layer, 1);
  EXPECT_EQ(c->key.stage, "q_norm");
  EXPECT_EQ(mark_inherited(rs), 1);
  EXPECT_NE(rs[1].note.find("inherited"), std::string::npos);
  EXPECT_TRUE(rs[3].note.empty());
}

TEST(Bisect, ChainedOnlyRunFallsBackToExecutionOrder) {
  std::vector<StageResult> rs = {res(0, "q", Mode::chained, Status::pass),
                                 res(2, "k", Mode::chained, Status::nan)};
  EXPECT_EQ(find_culprit(rs)->key.layer, 2);
  rs[1].status = Status::pass;
  EXPECT_FALSE(find_culprit(rs).has_value());
}

// The one rule the report notes and the viewer draws: a chained failure whose isolated twin
// passes only carries an earlier stage's error.
struct InheritCase {
  const char* name;
  StageResult chained, isolated;
  bool inherited;
};
void PrintTo(const InheritCase& c, std::ostream* os) { *os << c.name; }
class Inherited : public testing::TestWithParam<InheritCase> {};

TEST_P(Inherited, OnlyAChainedFailureOverAPassingTwin) {
  EXPECT_EQ(is_inherited_failure(GetParam().chained, GetParam().isolated), GetParam().inherited);
}

INSTANTIATE_TEST_SUITE_P(
    Bisect, Inherited,
    testing::Values(InheritCase{"fails_over_a_passing_twin", res(2, "q", Mode::chained, Status::fail),
                                res(2, "q", Mode::isolated, Status::pass), true},
                    InheritCase{"twin_fails_too", res(2, "q", Mode::chained, Status::fail),
                                res(2, "q", Mode::isolated, Status::fail), false},
                    InheritCase{"crash_is_its_own", res(2, "q", Mode::chained, Status::crashed),
                                res(2, "q", Mode::isolated, Status::pass), false},
                    InheritCase{"chained_passes", res(2, "q", Mode::chained, Status::pass),
                                res(2, "q", Mode::isolated, Status::pass), false},
                    InheritCase{"not_its_twin", res(2, "q", Mode::chained, Status::fail),
                                res(1, "q", Mode::isolated, Status::pass), false},
                    InheritCase{"modes_swapped", res(2, "q", Mode::isolated, Status::fail),
                                res(2, "q", Mode::chained, Status::pass), false}),
    [](const auto& info) { return std::string(info.param.name); });

struct DriftCase {
  std::vector<double> error, floor;
  std::optional<int> start;
};
void PrintTo(const DriftCase& c, std::ostream* os) {
  *os << "error";
  for (double e : c.error) *os << " " << e;
  *os << " floor";
  for (double f : c.floor) *os << " " << f;
  *os << (c.start ? " starts at " + std::to_string(*c.start) : " no drift");
}

class DriftStart : public testing::TestWithParam<DriftCase> {};

TEST_P(DriftStart, FirstLayerThatLeavesTheBandForGood) {
  EXPECT_EQ(drift_start_layer(GetParam().error, GetParam().floor, 4.0), GetParam().start);
}

INSTANTIATE_TEST_SUITE_P(Bisect, DriftStart,
                         testing::Values(
                             // Within 4x the floor everywhere: no drift.
                             DriftCase{{1, 2, 3, 3}, {1, 1, 1, 1}, std::nullopt},
                             // Leaves at layer 2 and keeps growing.
                             DriftCase{{1, 2, 5, 9, 20}, {1, 1, 1, 1, 1}, 2},
                             // A single excursion at layer 1 that comes back is not drift.
                             DriftCase{{1, 6, 2, 9, 20}, {1, 1, 1, 1, 1}, 3},
                             // The floor itself grows: relative to it nothing leaves.
                             DriftCase{{1, 2, 4, 8}, {1, 2, 4, 8}, std::nullopt}));

struct TrendCase {
  const char* name;
  std::vector<double> ratio;  // error / floor per layer (the floor is 1)
  std::optional<int> start;
};
void PrintTo(const TrendCase& c, std::ostream* os) { *os << c.name; }

class DriftTrend : public testing::TestWithParam<TrendCase> {};

TEST_P(DriftTrend, SteadyGrowthInsideTheBandIsDrift) {
  const std::vector<double> floor(GetParam().ratio.size(), 1.0);
  EXPECT_EQ(drift_trend_start(GetParam().ratio, floor), GetParam().start);
}

INSTANTIATE_TEST_SUITE_P(
    Bisect, DriftTrend,
    testing::Values(
        // The compounding bias that once read "No drift": 1.6x at layer 0 to 4.8x at layer 11.
        TrendCase{"compounding_from_layer0", {1.6, 1.7, 1.9, 2.0, 2.2, 2.4, 2.7, 3.0, 3.3, 3.7, 4.2, 4.8}, 0},
        // Flat, then compounding from layer 4.
        TrendCase{"compounding_from_layer4", {1.2, 0.9, 1.3, 1.1, 0.8, 1.3, 1.9, 2.6, 3.5, 4.6}, 4},
        // A correct candidate: the ratio wanders around 1.
        TrendCase{
            "noise_around_one", {1.2, 0.8, 1.5, 1.1, 0.9, 1.3, 1.0, 1.4, 0.9, 1.2, 1.1, 1.3}, std::nullopt},
        // Growing but ending below 2x the floor.
        TrendCase{"growth_that_stays_under_2x", {0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.9}, std::nullopt},
        // Above 2x but erratic, not steady.
        TrendCase{"erratic_rise", {1.0, 3.0, 1.1, 2.9, 1.2, 1.0, 3.1, 2.2}, std::nullopt},
        // Too few layers to speak of a trend.
        TrendCase{"three_layers", {1.0, 2.0, 4.0}, std::nullopt}),
    [](const testing::TestParamInfo<TrendCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace ds
