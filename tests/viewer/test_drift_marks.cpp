// What the overview marks besides its cells: a compounding chained drift (trend strip and a badge
// to the Drift tab) and local failures set apart from inherited ones by more than an outline.
#include <gtest/gtest.h>

#include "drift_marks.h"
#include "trace_fixture.h"
#include "trace_model.h"

namespace ds::view {

using testing::FixtureSpec;
using testing::stage_name;
using testing::write_fixture;

namespace {

std::unique_ptr<TraceModel> open_fixture(const std::string& name, const FixtureSpec& spec) {
  std::string err;
  auto m = TraceModel::open(write_fixture(name, spec), err);
  EXPECT_TRUE(m) << err;
  return m;
}

int brightness(Rgba c) { return c.r + c.g + c.b; }

struct TrendCase {
  const char* name;
  FixtureSpec spec;
  std::size_t trend_layers;
  bool compounding;
  const char* badge_has;  // "" : no badge
};

FixtureSpec spec_of(int layers, double growth, bool chained, int fail_layer, bool drift_start) {
  FixtureSpec s;
  s.layers = layers;
  s.chained_growth = growth;
  s.chained = chained;
  s.fail_layer = fail_layer;
  s.drift_start = drift_start;
  return s;
}

class DriftMarksTrend : public ::testing::TestWithParam<TrendCase> {};

TEST_P(DriftMarksTrend, MarksOnlyADriftThatCompounds) {
  const TrendCase& c = GetParam();
  const auto m = open_fixture(std::string("dm_") + c.name + ".h5", c.spec);
  ASSERT_TRUE(m);
  const DriftMarks d = drift_marks(*m, 0);
  EXPECT_EQ(d.trend.size(), c.trend_layers);
  EXPECT_EQ(d.compounding, c.compounding);
  if (*c.badge_has) {
    EXPECT_NE(d.badge.find(c.badge_has), std::string::npos) << d.badge;
    EXPECT_NE(d.badge.find("open the Drift tab"), std::string::npos) << d.badge;
  } else {
    EXPECT_EQ(d.badge, "");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runs, DriftMarksTrend,
    ::testing::Values(
        // Every stage passes and every cell is cool, but the chained error grows 3x a layer.
        TrendCase{"passing_drift_that_compounds", spec_of(6, 3, true, 99, false), 6, true,
                  "compounds 243x from layer 0 to 5"},
        TrendCase{"flat_chained_error", spec_of(6, 1, true, 99, false), 6, false, ""},
        // 3x over two layers: growth, but not a decade of it.
        TrendCase{"growth_under_a_decade", spec_of(2, 3, true, 99, false), 2, false, ""},
        TrendCase{"located_drift_start", spec_of(4, 1, true, 2, true), 4, true, "Drift starts at layer 2"},
        TrendCase{"isolated_only_run", spec_of(6, 3, false, 99, false), 0, false, ""},
        TrendCase{"one_layer", spec_of(1, 3, true, 99, false), 0, false, ""}),
    [](const ::testing::TestParamInfo<TrendCase>& p) { return std::string(p.param.name); });

TEST(DriftMarks, TheTrendStripBrightensWithTheError) {
  const auto m = open_fixture("dm_strip.h5", spec_of(5, 4, true, 99, false));
  ASSERT_TRUE(m);
  const DriftMarks d = drift_marks(*m, 0);
  ASSERT_EQ(d.trend.size(), 5u);
  for (std::size_t i = 1; i < d.trend.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_GT(d.trend[i].score, d.trend[i - 1].score);
    EXPECT_GT(brightness(d.trend[i].colour), brightness(d.trend[i - 1].colour));
  }
  // Every cell of the chained grid is the cool side of the scale: only the strip shows the rise.
  for (const Cell& c : m->grid(0, Mode::chained)->cells) EXPECT_FALSE(c.failing);
}

TEST(FailureStyle, LocalAndInheritedDifferInMoreThanTheOutlineColour) {
  struct Case {
    const char* name;
    float w, h;
  };
  for (const Case& c : {Case{"large", 60, 28}, Case{"medium", 20, 12}, Case{"tiny", 6, 4}}) {
    SCOPED_TRACE(c.name);
    const FailureStyle local = failure_style(FailureKind::local, c.w, c.h);
    const FailureStyle inherited = failure_style(FailureKind::inherited, c.w, c.h);
    EXPECT_EQ(local.border, kFailBorder);
    EXPECT_EQ(inherited.border, kInheritedBorder);
    EXPECT_GE(local.border_px, inherited.border_px);
    EXPECT_GE(inherited.border_px, 1.f);
    EXPECT_FALSE(inherited.corner_flag);
    EXPECT_EQ(local.corner_flag, std::min(c.w, c.h) >= 10);
  }
  EXPECT_GT(failure_style(FailureKind::local, 60, 28).border_px,
            failure_style(FailureKind::inherited, 60, 28).border_px);
  EXPECT_EQ(failure_style(FailureKind::none, 60, 28).border_px, 0.f);
}

TEST(FailureStyle, InheritedCellsAreMutedLocalOnesKeepTheirColour) {
  const auto m = open_fixture("dm_cells.h5", FixtureSpec{});
  ASSERT_TRUE(m);
  const Cell* local = m->cell(0, Mode::chained, 2, stage_name(3));
  const Cell* inherited = m->cell(0, Mode::chained, 3, stage_name(0));
  const Cell* pass = m->cell(0, Mode::chained, 0, stage_name(0));
  ASSERT_TRUE(local && inherited && pass);
  EXPECT_EQ(failure_kind(*local), FailureKind::local);
  EXPECT_EQ(failure_kind(*inherited), FailureKind::inherited);
  EXPECT_EQ(failure_kind(*pass), FailureKind::none);
  EXPECT_EQ(local->fill, cell_colour(local->score, Status::fail, false).packed());
  const Rgba hot = cell_colour(inherited->score, Status::fail, false);
  EXPECT_EQ(inherited->fill, inherited_fill(hot).packed());
  // Muted: nearer the background than the hot colour it came from.
  auto distance = [](Rgba a, Rgba b) {
    return std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b);
  };
  EXPECT_LT(distance(Rgba::unpack(inherited->fill), kEmptyColour), distance(hot, kEmptyColour) / 2);
}

}  // namespace

}  // namespace ds::view
