#include <gtest/gtest.h>

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

struct DriftCase {
  std::vector<double> error, floor;
  std::optional<int> start;
};

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
