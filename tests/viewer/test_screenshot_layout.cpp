// Headless screenshots of what a new user meets first: failing cells that keep their colour and
// say whether they fail here or inherit an earlier stage's error, a label on every heatmap row, a
// header that fits 800 px, noise floors and drift named as the trace has them, legends and the
// colour scale beside what they explain, and a heatmap that uses the window. Each reads pixels,
// or the layout --print-state reports.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "drift_marks.h"
#include "heatmap_layout.h"
#include "screenshot_util.h"
#include "trace_model.h"

namespace ds::view {

using namespace shot;

namespace {

// The viewer on `args` (a trace and options) at WxH: its --print-state output.
std::string shoot(const std::string& args, const std::string& size, const std::string& png) {
  return output_of(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + args + " --size " + size +
                   " --print-state --screenshot " + (dir() / png).string());
}

// Text is drawn light on a dark window: any pixel this bright in a band is ink.
bool ink(const Rgba& c) { return c.r + c.g + c.b > 3 * 110; }

bool ink_in(const Png& img, float x0, float y0, float x1, float y1) {
  for (int y = int(std::max(0.f, y0)); y < int(std::min(float(img.h), y1)); ++y)
    for (int x = int(std::max(0.f, x0)); x < int(std::min(float(img.w), x1)); ++x)
      if (ink(img.at(float(x), float(y)))) return true;
  return false;
}

struct RowsLine {
  int labelled = 0, rows = 0;
  Rect cells;
};
// "isolated rows: 18 of 18 labelled, cells 106,140,1470,530"
std::optional<RowsLine> rows_line(const std::string& out, const std::string& key) {
  const auto text = line_after(out, key);
  if (!text) return std::nullopt;
  RowsLine l;
  const auto at = text->find("cells ");
  const auto cells = at == std::string::npos ? std::nullopt : parse_rect(text->substr(at + 6));
  if (std::sscanf(text->c_str(), "%d of %d", &l.labelled, &l.rows) != 2 || !cells) return std::nullopt;
  l.cells = *cells;
  return l;
}

}  // namespace

// The mutant breaks residual_1 of layer 0; in chained mode every later stage fails on the error
// it is fed while its isolated twin passes. Every failing cell keeps its own error colour (they
// differ), and its outline says which kind of failure it is.
TEST(ScreenshotLayout, FailingCellsKeepTheirColourAndSayWhereTheyFail) {
  REQUIRE_XVFB();
  const std::string trace = mutant_trace("mut_cells.h5");
  const std::string png = (dir() / "cells.png").string();
  ASSERT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + trace + " --screenshot " + png +
                " --size 1600x1000 > /dev/null"),
            0);
  const Png img = load_png(png);
  ASSERT_EQ(img.w, 1600);
  std::string err;
  const auto m = TraceModel::open(trace, err);
  ASSERT_TRUE(m) << err;
  const OverviewLayout o = layout_overview(*m, 1600, 1000);
  int local = 0, inherited = 0;
  std::vector<std::uint32_t> fills;
  for (Mode mode : m->modes()) {
    const Grid* g = m->grid(0, mode);
    const HeatmapLayout* map = o.panel(mode);
    ASSERT_TRUE(g && map);
    for (int r = 0; r < map->n_rows; ++r)
      for (int c = 0; c < map->n_cols; ++c) {
        const Cell& cell = g->cells[std::size_t(r) * std::size_t(map->n_cols) + std::size_t(c)];
        if (!cell.failing || cell.nan) continue;
        const Rect cr = map->cell_rect(r, c);
        const std::string where = m->stages()[std::size_t(r)] + " layer " +
                                  std::to_string(m->layers()[std::size_t(c)]) + " " +
                                  std::string(mode_name(mode));
        EXPECT_EQ(img.at((cr.x0 + cr.x1) / 2, (cr.y0 + cr.y1) / 2), Rgba::unpack(cell.fill)) << where;
        EXPECT_EQ(img.at(cr.x0 + 1, (cr.y0 + cr.y1) / 2), cell.inherited ? kInheritedBorder : kFailBorder)
            << where;
        (cell.inherited ? inherited : local) += 1;
        fills.push_back(cell.fill);
      }
  }
  EXPECT_GE(local, 2);  // residual_1 of layer 0 in both modes
  EXPECT_GE(inherited, 5);
  std::sort(fills.begin(), fills.end());
  EXPECT_GE(std::unique(fills.begin(), fills.end()) - fills.begin(), 3) << "failing cells all look alike";
}

// Every stage row carries its own label, inside its own row band, in the overview and in the
// compare view; the printed layout is what the test aims at.
TEST(ScreenshotLayout, EveryHeatmapRowIsLabelledOnItsOwnRow) {
  REQUIRE_XVFB();
  const std::string trace = mutant_trace("mut_labels.h5");
  struct View {
    std::string args, size, key;
  };
  const View views[] = {
      {trace + " --compare " + trace + " --view compare", "1200x800", "compare isolated rows: "},
      {trace + " --compare " + trace + " --view compare", "1200x800", "compare chained rows: "},
      {trace, "800x600", "overview chained rows: "},
  };
  int n = 0;
  for (const View& v : views) {
    const std::string png = "labels_" + std::to_string(n++) + ".png";
    const std::string out = shoot(v.args, v.size, png);
    const auto rows = rows_line(out, v.key);
    ASSERT_TRUE(rows) << v.key << " not in:\n" << out;
    EXPECT_EQ(rows->labelled, rows->rows) << v.key << v.size;
    const Png img = load_png((dir() / png).string());
    ASSERT_GT(img.w, 0);
    const float h = rows->cells.h() / float(rows->rows);
    for (int r = 0; r < rows->rows; ++r) {
      const float y0 = rows->cells.y0 + h * float(r);
      EXPECT_TRUE(ink_in(img, rows->cells.x0 - kRowLabelWidth, y0 + 1, rows->cells.x0 - 6, y0 + h - 1))
          << v.key << v.size << ": row " << r << " has no label";
    }
  }
}

// At 800 px the run's header wraps instead of running off the right edge, and the heatmap
// starts below it.
TEST(ScreenshotLayout, HeaderFitsAnEightHundredPixelWindow) {
  REQUIRE_XVFB();
  const std::string trace = mutant_trace("mut_header.h5");
  const std::string out = shoot(trace, "800x600", "header.png");
  const auto header = line_after(out, "trace header: ");
  ASSERT_TRUE(header) << out;
  const auto box = parse_rect(*header);
  ASSERT_TRUE(box) << *header;
  const Png img = load_png((dir() / "header.png").string());
  ASSERT_EQ(img.w, 800);
  EXPECT_FALSE(ink_in(img, 792, box->y0, 800, box->y1)) << "header text runs off the right edge";
  EXPECT_TRUE(ink_in(img, 0, box->y0, 400, box->y1));  // and there is a header
  const auto rows = rows_line(out, "overview isolated rows: ");
  ASSERT_TRUE(rows) << out;
  EXPECT_GE(rows->cells.y0, box->y1);
}

// The drift text and the Drift tab's noise-floor note say what the trace holds.
TEST(ScreenshotLayout, DriftAndNoiseFloorAreNamedAsTheTraceHasThem) {
  REQUIRE_XVFB();
  const std::string failing = mutant_trace("mut_floor.h5");
  const std::string passing =
      trace_of("pass_floor.h5", "--model synthetic:qwen2-tiny --candidate cpu-f16 --mode both");
  std::string out = shoot(failing + " --view drift", "1200x800", "floor_fail.png");
  EXPECT_EQ(line_after(out, "drift floor: "), "shaded: noise floor") << out;
  out = shoot(passing + " --view drift", "1200x800", "floor_pass.png");
  EXPECT_EQ(line_after(out, "drift floor: "), "shaded: noise floor") << out;
  out = shoot(passing, "1200x800", "drift_pass.png");
  const auto header = line_after(out, "trace header: ");
  ASSERT_TRUE(header) << out;
  EXPECT_NE(header->find("drift starts at: none (no drift"), std::string::npos) << *header;
  EXPECT_EQ(header->find("not in result"), std::string::npos) << *header;
}

// The curves' legend sits right of the plot, never over the end of a curve, in both plots.
TEST(ScreenshotLayout, LegendsSitBesideThePlots) {
  REQUIRE_XVFB();
  const std::string trace = mutant_trace("mut_legend.h5");
  for (const std::string view : {"drift", "compare"}) {
    const std::string png = "legend_" + view + ".png";
    const std::string out = shoot(trace + " --compare " + trace + " --view " + view, "1200x800", png);
    const auto line = line_after(out, view + " plot: ");
    ASSERT_TRUE(line) << out;
    const auto plot = parse_rect(*line);
    const auto at = line->find("legend: ");
    ASSERT_NE(at, std::string::npos) << *line;
    const auto legend = parse_rect(line->substr(at + 8));
    ASSERT_TRUE(plot && legend) << *line;
    EXPECT_GE(legend->x0, plot->x1) << view;
    EXPECT_LE(legend->x1, 1200) << view;
    const Png img = load_png((dir() / png).string());
    EXPECT_EQ(img.at(legend->x1 - 3, (legend->y0 + legend->y1) / 2), (Rgba{16, 16, 20, 255})) << view;
  }
}

// "step" stands left of its slider, both inside their panel.
TEST(ScreenshotLayout, StepSliderLabelDoesNotOverlapTheSlider) {
  REQUIRE_XVFB();
  const std::string trace = trace_of(
      "steps.h5", "--model synthetic:qwen2-tiny --candidate cpu-f16 --prompt-tokens 4 --decode-steps 2");
  for (const std::string view : {"overview", "drift"}) {
    const std::string out = shoot(trace + " --view " + view, "1200x800", "slider_" + view + ".png");
    const auto line = line_after(out, view + " step slider: label ");
    ASSERT_TRUE(line) << out;
    const auto label = parse_rect(*line);
    const auto at = line->find("slider ");
    ASSERT_NE(at, std::string::npos) << *line;
    const auto slider = parse_rect(line->substr(at + 7));
    ASSERT_TRUE(label && slider) << *line;
    EXPECT_LE(label->x1, slider->x0) << view;
    EXPECT_GT(slider->w(), 40) << view;
    if (view == "drift") {
      EXPECT_LE(slider->x1, 240) << "past the 230 px control column";
    }
  }
}

// The inspector's |diff| map has its colour scale beside it: hot at the top, cool at the bottom.
TEST(ScreenshotLayout, InspectorHeatmapHasAColourScale) {
  REQUIRE_XVFB();
  const std::string trace = mutant_trace("mut_inspect.h5");
  const std::string out =
      shoot(trace + " --view inspect:0:0:residual_1:isolated", "1600x1000", "inspect_scale.png");
  const auto line = line_after(out, "inspector map: ");
  ASSERT_TRUE(line) << out;
  const auto map = parse_rect(*line);
  const auto at = line->find("scale: ");
  ASSERT_NE(at, std::string::npos) << *line;
  const auto scale = parse_rect(line->substr(at + 7));
  ASSERT_TRUE(map && scale) << *line;
  EXPECT_GE(scale->x0, map->x1);
  const Png img = load_png((dir() / "inspect_scale.png").string());
  const float x = (scale->x0 + scale->x1) / 2;
  const Rgba top = img.at(x, scale->y0 + 2), bottom = img.at(x, scale->y1 - 2);
  const Rgba hot = error_colour(1e3), cool = error_colour(1e-6);
  EXPECT_LT(std::abs(top.r - hot.r) + std::abs(top.g - hot.g) + std::abs(top.b - hot.b), 30);
  EXPECT_LT(std::abs(bottom.r - cool.r) + std::abs(bottom.g - cool.g) + std::abs(bottom.b - cool.b), 30);
}

// A 2-layer model's heatmap spans the window's width instead of a third of it.
TEST(ScreenshotLayout, HeatmapUsesTheWindow) {
  REQUIRE_XVFB();
  const std::string trace = mutant_trace("mut_space.h5");
  const std::string out = shoot(trace, "1600x1000", "space.png");
  const auto rows = rows_line(out, "overview isolated rows: ");
  ASSERT_TRUE(rows) << out;
  const float avail = 1600 - kLegendWidth - 2 * kMargin - kRowLabelWidth;
  EXPECT_GT(rows->cells.w(), 0.9f * avail);
  // The last column is drawn where the layout says: its first row's colour sits at its right end.
  std::string err;
  const auto m = TraceModel::open(trace, err);
  ASSERT_TRUE(m) << err;
  const Cell* last = m->cell(0, Mode::isolated, m->layers().back(), m->stages().front());
  ASSERT_TRUE(last);
  const Png img = load_png((dir() / "space.png").string());
  const float h = rows->cells.h() / float(rows->rows);
  EXPECT_EQ(img.at(rows->cells.x1 - 12, rows->cells.y0 + h / 2), Rgba::unpack(last->fill));
}

}  // namespace ds::view

namespace ds::view {
namespace {

// The chained panel points at the drift: its trend strip is painted in the colours the
// view-model chose per layer, and the badge naming the Drift tab is drawn.
TEST(ScreenshotLayout, ChainedPanelMarksTheDriftWithAStripAndABadge) {
  REQUIRE_XVFB();
  const std::string trace = mutant_trace("mut_drift_marks.h5");
  const std::string out = shoot(trace, "1600x1000", "drift_marks.png");
  std::string err;
  const auto m = TraceModel::open(trace, err);
  ASSERT_TRUE(m) << err;
  const DriftMarks marks = drift_marks(*m, 0);
  ASSERT_TRUE(marks.compounding);
  const auto badge = line_after(out, "drift badge at ");
  ASSERT_TRUE(badge) << out;
  EXPECT_NE(badge->find(": " + marks.badge), std::string::npos) << *badge;
  const auto box = parse_rect(*badge);
  ASSERT_TRUE(box) << *badge;
  EXPECT_NE(out.find(fmt::format("trend strip: {} layer(s)", marks.trend.size())), std::string::npos) << out;
  const Png img = load_png((dir() / "drift_marks.png").string());
  const HeatmapLayout* chained = layout_overview(*m, 1600, 1000).panel(Mode::chained);
  ASSERT_TRUE(chained);
  for (const LayerTrend& t : marks.trend) {
    SCOPED_TRACE(t.layer);
    const Rect cr = chained->cell_rect(0, m->layer_index(t.layer));
    EXPECT_EQ(img.at(cr.x0 + 4, chained->title.y1 - 3), t.colour);
  }
  // Clicking the badge opens the Drift tab.
  const std::string at = fmt::format("{},{}", int((box->x0 + box->x1) / 2), int((box->y0 + box->y1) / 2));
  const std::string clicked =
      output_of(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + trace + " --size 1600x1000 --click " + at +
                " --print-state --screenshot " + (dir() / "badge_click.png").string());
  EXPECT_NE(clicked.find("state: tab=drift"), std::string::npos) << "click at " << at << ":\n" << clicked;
}

}  // namespace
}  // namespace ds::view

namespace ds::view {

// A batch trace (a real run: the planted sequence offset fails sequence 1 only): the overview and
// drift tabs have a sequence picker beside the step slider naming the sequence shown and its
// failing stages; --seq opens another one, and a sequence the trace lacks is exit 2.
TEST(ScreenshotLayout, ABatchTraceHasASequencePicker) {
  REQUIRE_XVFB();
  const std::string trace = trace_of("batch.h5",
                                     "--model synthetic:qwen3-tiny --candidate mutant:batch-seq-offset "
                                     "--batch 3 --batch-prompts 2,5,3 --mode both");
  for (const std::string view : {"overview", "drift"}) {
    const std::string first = shoot(trace + " --view " + view, "1400x900", "batch0_" + view + ".png");
    const auto picker0 = line_after(first, view + " sequence picker: ");
    ASSERT_TRUE(picker0) << first;
    EXPECT_NE(picker0->find("showing sequence 0 of 3 sequences"), std::string::npos) << *picker0;
  }
  const std::string second = shoot(trace + " --seq 1", "1400x900", "batch1.png");
  const auto picker1 = line_after(second, "overview sequence picker: ");
  ASSERT_TRUE(picker1) << second;
  EXPECT_NE(picker1->find("showing sequence 1 ("), std::string::npos) << *picker1;
  EXPECT_NE(picker1->find(" failing) of 3 sequences"), std::string::npos) << *picker1;
  // A run of one sequence has no picker.
  const std::string single = shoot(mutant_trace("batch_single.h5"), "1400x900", "single.png");
  EXPECT_FALSE(line_after(single, "overview sequence picker: ")) << single;
  EXPECT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + trace + " --seq 5 --screenshot " +
                (dir() / "bad.png").string() + " > /dev/null 2>&1"),
            2);
}

}  // namespace ds::view
