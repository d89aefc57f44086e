// Log-scale ticks and the error colour mapping.
#include <gtest/gtest.h>

#include <cmath>

#include "colour_map.h"
#include "log_scale.h"
#include "trace_model.h"

namespace ds::view {

TEST(LogScale, FitsWholeDecadesAroundPositiveValues) {
  const double v[] = {0.0, 3e-5, 2e-2, std::nan(""), HUGE_VAL};
  const LogScale s = fit_log_scale(v);
  EXPECT_DOUBLE_EQ(s.lo, 1e-5);
  EXPECT_DOUBLE_EQ(s.hi, 1e-1);
  EXPECT_DOUBLE_EQ(s.to_unit(1e-3), 0.5);
  EXPECT_DOUBLE_EQ(s.to_unit(0), 0);   // no place on a log axis: the floor
  EXPECT_DOUBLE_EQ(s.to_unit(10), 1);  // clamped
  EXPECT_NEAR(s.from_unit(0.25), 1e-4, 1e-18);
}

TEST(LogScale, NoValuesGivesADefaultAndFlatValuesGetRoom) {
  EXPECT_GT(fit_log_scale(std::vector<double>{}).hi, fit_log_scale(std::vector<double>{}).lo);
  const double v[] = {5.0, 5.0};
  const LogScale s = fit_log_scale(v, 2);
  EXPECT_LE(s.lo, 5.0);
  EXPECT_GE(s.hi, 5.0);
  EXPECT_GE(std::log10(s.hi / s.lo), 2 - 1e-9);
}

TEST(LogScale, MajorTicksPerDecadeWithLabelsAndMinorsWhenFew) {
  const auto ticks = log_ticks({1e-3, 1e0});
  std::vector<std::string> labels;
  int minors = 0;
  for (const auto& t : ticks) {
    if (t.major)
      labels.push_back(t.label);
    else
      ++minors;
    EXPECT_GE(t.unit, 0);
    EXPECT_LE(t.unit, 1);
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"0.001", "0.01", "0.1", "1"}));
  EXPECT_EQ(minors, 3 * 8);
}

TEST(LogScale, ManyDecadesThinLabelsAndDropMinors) {
  const auto ticks = log_ticks({1e-20, 1e4});
  int labelled = 0;
  for (const auto& t : ticks) {
    EXPECT_TRUE(t.major);
    labelled += !t.label.empty();
  }
  EXPECT_EQ(ticks.size(), 25u);
  EXPECT_LE(labelled, 9);
  EXPECT_EQ(ticks.front().label, "1e-20");
}

TEST(LinearTicks, NiceSteps) {
  const auto t = linear_ticks(0, 10, 5);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[1].label, "2");
  EXPECT_DOUBLE_EQ(t.back().unit, 1);
}

TEST(ColourMap, PassIsCoolFailIsHotNanIsMagenta) {
  for (double r : {0.0, 1e-7, 1e-3, 0.5, 0.999}) {
    const Rgba c = error_colour(r);
    EXPECT_LT(c.r, c.g) << r;  // cool ramp: never more red than green
  }
  for (double r : {1.0, 3.0, 100.0, 1e9}) {
    const Rgba c = error_colour(r);
    EXPECT_GT(c.r, 180) << r;
    EXPECT_GT(c.r, c.g + 80) << r;
  }
  EXPECT_EQ(error_colour(std::nan("")), kNanColour);
  // Monotone in redness above the tolerance.
  EXPECT_GE(error_colour(1).g, error_colour(10).g);
  EXPECT_GE(error_colour(10).g, error_colour(1000).g);
}

TEST(ColourMap, FailingCellsKeepTheScale) {
  // A pass whose score slightly exceeds 1 (rms-based score) stays on the cool side; a failure
  // keeps its own colour whatever side it scores on (its outline says it failed), so failures of
  // different sizes never look alike.
  EXPECT_EQ(cell_colour(1.2, Status::pass, false), error_colour(0.999));
  EXPECT_EQ(cell_colour(0.8, Status::fail, false), error_colour(0.8));
  EXPECT_EQ(cell_colour(40, Status::fail, false), error_colour(40));
  EXPECT_NE(cell_colour(0.01, Status::fail, false), cell_colour(0.8, Status::fail, false));
  EXPECT_NE(cell_colour(2, Status::fail, false), cell_colour(200, Status::fail, false));
  EXPECT_EQ(cell_colour(0.0, Status::nan, true), kNanColour);
  EXPECT_EQ(cell_colour(0.0, Status::skipped, false), kSkippedColour);
  // A stage the reference fill computed is neither a pass nor a failure: its own colour.
  EXPECT_EQ(cell_colour(0.0, Status::filled, false), kFilledColour);
  EXPECT_NE(kFilledColour.packed(), cell_colour(0.0, Status::pass, false).packed());
  // A race is as red as a crash whatever its values: its output depends on the schedule.
  EXPECT_EQ(cell_colour(0.0, Status::race, false), cell_colour(0.0, Status::crashed, false));
  EXPECT_NE(cell_colour(0.0, Status::race, false).packed(), cell_colour(0.0, Status::pass, false).packed());
}

TEST(ColourMap, PackedIsImGuiLayout) { EXPECT_EQ((Rgba{1, 2, 3, 4}.packed()), 0x04030201u); }

TEST(ErrorScore, IsMaxAbsOverTolerance) {
  Metrics m;
  m.max_abs = 0.02;
  m.atol = 0.01;
  m.rtol = 0.01;
  m.ref_rms = 1;
  EXPECT_DOUBLE_EQ(error_score(m), 1.0);
  m.atol = m.rtol = 0;
  EXPECT_GT(error_score(m), 1);
  m.max_abs = 0;
  EXPECT_EQ(error_score(m), 0);
}

}  // namespace ds::view
