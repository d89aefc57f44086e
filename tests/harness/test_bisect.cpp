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

}  // namespace
}  // namespace ds
