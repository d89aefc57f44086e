// The trace view-model: grids, cell lookup from a click, lazy loading, bad files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "compare_model.h"
#include "drift_series.h"
#include "heatmap_layout.h"
#include "inspector_model.h"
#include "trace_fixture.h"
#include "trace_merge.h"
#include "trace_model.h"
#include "trace_stub.h"
#include "view_options.h"

namespace ds::view {

using testing::FixtureSpec;
using testing::stage_name;
using testing::write_fixture;

// The header says what the stages were judged against, and which probe fed them.
TEST(TraceModel, RunInfoNamesTheBaselineAndTheProbe) {
  FixtureSpec spec;
  std::string err;
  const auto plain = TraceModel::open(write_fixture("vm_plain.h5", spec), err);
  ASSERT_TRUE(plain) << err;
  EXPECT_EQ(plain->info().baseline, "");
  EXPECT_EQ(plain->info().probe, "");
  spec.baseline = "simt";
  spec.probe = "tiny-rows";
  const auto against = TraceModel::open(write_fixture("vm_baseline.h5", spec), err);
  ASSERT_TRUE(against) << err;
  EXPECT_EQ(against->info().baseline, "simt");
  EXPECT_EQ(against->info().probe, "tiny-rows");
}

TEST(TraceModel, BuildsGridsWithFailingAndNanCells) {
  FixtureSpec spec;
  spec.nan_layer = 3;
  std::string err;
  const auto m = TraceModel::open(write_fixture("vm_small.h5", spec), err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->layers().size(), 4u);
  EXPECT_EQ(m->stages().size(), 5u);
  EXPECT_EQ(m->modes().size(), 2u);
  EXPECT_EQ(m->info().candidate, "fixture-cand");
  EXPECT_EQ(m->info().drift_start_layer, 2);
  EXPECT_NE(m->info().first_failure.find(stage_name(3)), std::string::npos);
  const Cell* fail = m->cell(0, Mode::isolated, 2, stage_name(3));
  const Cell* pass = m->cell(0, Mode::isolated, 1, stage_name(3));
  const Cell* nan = m->cell(0, Mode::chained, 3, stage_name(0));
  ASSERT_TRUE(fail && pass && nan);
  EXPECT_TRUE(fail->failing);
  EXPECT_FALSE(pass->failing);
  EXPECT_TRUE(nan->nan);
  EXPECT_EQ(fail->fill, cell_colour(fail->score, Status::fail, false).packed());
  EXPECT_EQ(m->grid(0, Mode::isolated)->n_fail, 1);
  EXPECT_EQ(m->grid(0, Mode::chained)->n_nan, 1);
  // Trace v1 rows carry floor_* fields (NaN when no floor was recorded); older traces lack them.
  // Either way the model opens, with one value per summary row for each field it found.
  for (const auto& [name, values] : m->extras()) {
    EXPECT_EQ(name.rfind("floor_", 0), 0u) << name;
    EXPECT_FALSE(values.empty()) << name;
  }
}

// A batch run holds every stage once per sequence: the model shows one sequence at a time, and
// the sequence that failed is told apart from the ones that passed.
TEST(TraceModel, ABatchShowsOneSequenceAtATime) {
  FixtureSpec spec;
  spec.seqs = 3;
  spec.fail_seq = 2;
  std::string err;
  auto m = TraceModel::open(write_fixture("vm_batch.h5", spec), err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->seqs(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m->seq(), 0);
  EXPECT_EQ(m->failing(0, 0), 0);
  EXPECT_EQ(m->failing(0, 1), 0);
  EXPECT_GT(m->failing(0, 2), 0);
  EXPECT_EQ(m->grid(0, Mode::isolated)->n_fail, 0);
  EXPECT_FALSE(m->cell(0, Mode::isolated, 2, stage_name(3))->failing);
  m->select_seq(2);
  EXPECT_EQ(m->seq(), 2);
  EXPECT_EQ(m->grid(0, Mode::isolated)->n_fail, 1);
  EXPECT_TRUE(m->cell(0, Mode::isolated, 2, stage_name(3))->failing);
  const trace::TraceRow* row = m->row(0, Mode::isolated, 2, stage_name(3));
  ASSERT_TRUE(row);
  EXPECT_EQ(row->result.key.seq, 2);
  EXPECT_EQ(row->result.status, Status::fail);
  // Inherited failures are found within each sequence: seq 2's chained stages after the bug.
  EXPECT_GT(m->grid(0, Mode::chained)->n_inherited, 0);
  m->select_seq(7);  // not in the trace: the selection stays
  EXPECT_EQ(m->seq(), 2);
}

// A finding of the run (a race, a leak, batch variance, a bad memory access) fails its stage
// whatever its values, and is drawn as hot as a crash, not by its (possibly tiny) error.
TEST(TraceModel, RunFindingsAreDrawnAsHotAsACrash) {
  const Rgba hot = cell_colour(0, Status::crashed, false);
  for (Status s : {Status::race, Status::leak, Status::batch_variant, Status::memory})
    EXPECT_EQ(cell_colour(1e-6, s, false).packed(), hot.packed()) << status_name(s);
}

// The fixture fails stage 3 of layer 2 in both modes (a local failure) and every later chained
// stage, whose isolated twins pass: those only carry the error they were fed.
TEST(TraceModel, ChainedFailuresWithAPassingIsolatedTwinAreInherited) {
  std::string err;
  const auto m = TraceModel::open(write_fixture("vm_inherit.h5", {}), err);
  ASSERT_TRUE(m) << err;
  const Cell* local_iso = m->cell(0, Mode::isolated, 2, stage_name(3));
  const Cell* local_chain = m->cell(0, Mode::chained, 2, stage_name(3));
  const Cell* inherited = m->cell(0, Mode::chained, 3, stage_name(0));
  ASSERT_TRUE(local_iso && local_chain && inherited);
  EXPECT_TRUE(local_chain->failing);
  EXPECT_FALSE(local_chain->inherited);
  EXPECT_FALSE(local_iso->inherited);
  EXPECT_TRUE(inherited->failing);
  EXPECT_TRUE(inherited->inherited);
  // Layer 2 stage 4 and layer 3 stages 0-4 are inherited; the local one is not.
  EXPECT_EQ(m->grid(0, Mode::chained)->n_inherited, 6);
  EXPECT_EQ(m->grid(0, Mode::isolated)->n_inherited, 0);
}

struct DriftTextCase {
  const char* name;
  bool drift_start;
  const char* expect;
  bool chained = true;
  const char* verdict = "FAIL: fixture";
};
void PrintTo(const DriftTextCase& c, std::ostream* os) { *os << c.name; }
class DriftText : public ::testing::TestWithParam<DriftTextCase> {};

TEST_P(DriftText, SaysWhatIsKnownAboutDrift) {
  FixtureSpec spec;
  spec.drift_start = GetParam().drift_start;
  spec.chained = GetParam().chained;
  spec.verdict = GetParam().verdict;
  std::string err;
  const auto m =
      TraceModel::open(write_fixture(std::string("vm_drift_") + GetParam().name + ".h5", spec), err);
  ASSERT_TRUE(m) << err;
  EXPECT_NE(m->info().drift_text.find(GetParam().expect), std::string::npos) << m->info().drift_text;
  EXPECT_EQ(m->info().drift_text.find("not in result"), std::string::npos);
  // Only a chained lane checks drift: an isolated run never reads as "no drift".
  if (!GetParam().chained) {
    EXPECT_EQ(m->info().drift_text.find("no drift"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Result, DriftText,
                         ::testing::Values(DriftTextCase{"located", true, "layer 2"},
                                           DriftTextCase{"absent_from_result", false, "not located"},
                                           DriftTextCase{"isolated_only_pass", false, "NOT CHECKED", false,
                                                         "PASS: 20 stages within policy"},
                                           DriftTextCase{"isolated_only_fail", false, "NOT CHECKED", false}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(DriftSeries, NoiseFloorsPerMetric) {
  FixtureSpec spec;
  spec.floors = true;
  std::string err;
  const auto with = TraceModel::open(write_fixture("vm_floors.h5", spec), err);
  const auto without = TraceModel::open(write_fixture("vm_no_floors.h5", {}), err);
  ASSERT_TRUE(with && without) << err;
  EXPECT_TRUE(has_floor_metrics(*with));
  EXPECT_FALSE(has_floor_metrics(*without));  // every floor NaN: none recorded
  const std::vector<std::string> stages{stage_name(1)};
  const std::vector<Mode> modes{Mode::chained};
  // max |diff| / tolerance: the floor over the same tolerance (atol 1e-3 + rtol 1e-3 x rms 1).
  auto s = drift_series(*with, 0, stages, Metric::tol_ratio, modes);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0].has_floor);
  EXPECT_NEAR(s[0].points[1].floor, 1e-5 / 2e-3, 1e-12);  // layer 1: floor_max_abs 1e-5
  s = drift_series(*with, 0, stages, Metric::mean_abs, modes);
  EXPECT_NEAR(s[0].points[1].floor, 1e-5 / 4, 1e-15);
  s = drift_series(*with, 0, stages, Metric::max_ulp, modes);  // no ULP floor is recorded
  EXPECT_FALSE(s[0].has_floor);
  s = drift_series(*without, 0, stages, Metric::max_abs, modes);
  EXPECT_FALSE(s[0].has_floor);
  EXPECT_EQ(s[0].points[0].floor, -1);
}

TEST(HeatmapLayout, ClickMapsBackToTheCellDrawnThere) {
  const HeatmapLayout l = layout_heatmap({10, 100, 1210, 700}, 30, 81);
  EXPECT_GT(l.cell_w, 0);
  EXPECT_GT(l.cell_h, 0);
  for (int r : {0, 7, 29})
    for (int c : {0, 40, 80}) {
      const Rect cr = l.cell_rect(r, c);
      EXPECT_EQ(l.cell_at((cr.x0 + cr.x1) / 2, (cr.y0 + cr.y1) / 2), (CellPos{r, c}));
      EXPECT_EQ(l.cell_at(cr.x0, cr.y0), (CellPos{r, c}));  // edges belong to the cell they start
    }
  EXPECT_FALSE(l.cell_at(l.cells.x0 - 1, l.cells.y0 + 1));  // on the stage labels
  EXPECT_FALSE(l.cell_at(l.cells.x1, l.cells.y0 + 1));      // right of the last column
  EXPECT_LE(l.cells.x1, l.frame.x1);
  EXPECT_LE(l.cells.y1 + kColLabelHeight, l.frame.y1 + 0.5f);
}

TEST(HeatmapLayout, SmallTracesFillTheWidthAndOverviewStacksModes) {
  std::string err;
  const auto m = TraceModel::open(write_fixture("vm_layout.h5", {}), err);
  ASSERT_TRUE(m) << err;
  const OverviewLayout o = layout_overview(*m, 1600, 1000);
  ASSERT_EQ(o.panels.size(), 2u);
  // A few layers still span the panel (less than one cell of slack), not a third of it.
  const HeatmapLayout& map = o.panels[0].map;
  EXPECT_GT(map.cells.x1, map.frame.x1 - map.cell_w);
  EXPECT_LE(map.cells.x1, map.frame.x1);
  EXPECT_LE(map.cell_h, kMaxCellHeight);
  EXPECT_LE(o.panels[0].map.cells.y1, o.panels[1].map.frame.y0);
  EXPECT_TRUE(o.panel(Mode::chained));
  // Side by side (the compare view): one column per mode, each the full height below the header.
  const OverviewLayout cols = layout_overview(*m, 1600, 1000, kHeaderHeight, true);
  ASSERT_EQ(cols.panels.size(), 2u);
  EXPECT_FLOAT_EQ(cols.panels[0].map.frame.y0, cols.panels[1].map.frame.y0);
  EXPECT_LE(cols.panels[0].map.frame.x1, cols.panels[1].map.frame.x0);
  EXPECT_GT(cols.panels[0].map.cell_h, o.panels[0].map.cell_h - 1);
  // A taller header (wrapped in a narrow window) moves the panels down with it.
  const OverviewLayout low = layout_overview(*m, 1600, 1000, kHeaderHeight + 40);
  EXPECT_FLOAT_EQ(low.panels[0].map.frame.y0, o.panels[0].map.frame.y0 + 40);
}

TEST(LazyLoading, OpeningALargeTraceReadsNoTensorData) {
  FixtureSpec spec;
  spec.layers = 80;
  spec.stages = 30;
  spec.fail_layer = 60;
  const std::string path = write_fixture("vm_large.h5", spec);
  std::string err;
  const auto m = TraceModel::open(path, err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->rows().size(), 80u * 30u * 2u);
  EXPECT_EQ(m->reader().elements_read(), 0);
  // Everything the overview, drift and compare views need comes from the summary rows.
  const auto o = layout_overview(*m, 1600, 1000);
  EXPECT_EQ(o.panels[0].map.n_cols, 80);
  const auto stages = default_drift_stages(*m);
  const Mode modes[] = {Mode::isolated, Mode::chained};
  const auto series = drift_series(*m, 0, stages, Metric::max_abs, modes);
  EXPECT_FALSE(series.empty());
  EXPECT_EQ(compare_grids(*m, *m).size(), 2u);
  EXPECT_EQ(m->reader().elements_read(), 0);
  // Inspecting one stage reads exactly that stage: ref + cand + per-token errors.
  const Inspection in = inspect(*m, {0, 60, stage_name(3), Mode::isolated});
  ASSERT_TRUE(in.loaded()) << in.error;
  EXPECT_EQ(m->reader().elements_read(), 32 + 32 + 4);
  EXPECT_EQ(in.focus, 9);  // the first mismatch
  EXPECT_EQ(in.rows, 4);
  EXPECT_EQ(in.cols, 8);
}

TEST(Inspector, CoordinatesHistogramAndDiffImage) {
  std::string err;
  FixtureSpec spec;
  spec.nan_layer = 3;
  const auto m = TraceModel::open(write_fixture("vm_inspect.h5", spec), err);
  ASSERT_TRUE(m) << err;
  const Inspection in = inspect(*m, {0, 3, stage_name(0), Mode::chained});
  ASSERT_TRUE(in.loaded()) << in.error;
  EXPECT_EQ(in.focus, 5);  // the NaN element is the first mismatch
  EXPECT_EQ(parse_coordinate("1,2", in), 10);
  EXPECT_EQ(parse_coordinate("1 2", in), 10);
  EXPECT_EQ(parse_coordinate("31", in), 31);
  EXPECT_FALSE(parse_coordinate("4,0", in));
  EXPECT_FALSE(parse_coordinate("x", in));
  EXPECT_EQ(coordinate_str(10, in.shape), "[1, 2]");
  std::int64_t total = 0;
  for (auto n : in.err_hist) total += n;
  EXPECT_EQ(total, 32);
  EXPECT_EQ(in.err_hist[kErrBins - 1], 1);  // the NaN
  const DiffImage img = diff_image(in, 0, 0, 4, 8, 2);
  EXPECT_EQ(img.out_rows, 2);
  EXPECT_EQ(img.out_cols, 2);
  EXPECT_EQ(img.fill[1], kNanColour.packed());  // element [0, 5]: NaN survives max-pooling
  const Inspection missing = inspect(*m, {0, 99, "nope", Mode::chained});
  EXPECT_FALSE(missing.loaded());
  EXPECT_FALSE(missing.error.empty());
}

TEST(Compare, RatioOfScoresPerCell) {
  EXPECT_DOUBLE_EQ(score_change(0, 0), 1);
  EXPECT_TRUE(std::isinf(score_change(0, 1)));
  EXPECT_DOUBLE_EQ(score_change(2, 1), 0.5);
  std::string err;
  FixtureSpec a, b;
  b.fail_layer = 1;
  const auto base = TraceModel::open(write_fixture("vm_base.h5", a), err);
  const auto cur = TraceModel::open(write_fixture("vm_cur.h5", b), err);
  ASSERT_TRUE(base && cur) << err;
  const auto grids = compare_grids(*base, *cur);
  ASSERT_EQ(grids.size(), 2u);
  EXPECT_GT(grids[0].worse, 0);                        // layer 1 stage 3 got much worse
  EXPECT_GT(compare_grids(*cur, *base)[0].better, 0);  // and back again
}

TEST(BadFiles, OpenReportsAnErrorAndNeverThrows) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string garbage = (dir / "vm_garbage.h5").string();
  std::ofstream(garbage) << "definitely not HDF5";
  const std::string truncated = (dir / "vm_truncated.h5").string();
  {
    const std::string full = write_fixture("vm_full.h5", {});
    std::ifstream in(full, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  for (const std::string& p : {garbage, truncated, (dir / "vm_does_not_exist.h5").string()}) {
    std::string err;
    std::unique_ptr<TraceModel> m;
    EXPECT_NO_THROW(m = TraceModel::open(p, err));
    EXPECT_FALSE(m) << p;
    EXPECT_NE(err.find(p), std::string::npos) << err;
  }
}

TEST(ViewOptions, ScriptedClicksHoverPressRelease) {
  EXPECT_FALSE(parse_click("10"));
  EXPECT_FALSE(parse_click("a,b"));
  EXPECT_FALSE(parse_click("-1,5"));
  const auto c = parse_click("420,310");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->x, 420);
  EXPECT_EQ(c->y, 310);
  const std::vector<Click> clicks{{1, 2}, {3, 4}};
  EXPECT_FALSE(scripted_mouse(clicks, 0));  // frame 0 lays out the window
  const bool down[] = {false, true, false, false, true, false};
  for (int f = 1; f <= 6; ++f) {
    const auto mouse = scripted_mouse(clicks, f);
    ASSERT_TRUE(mouse) << f;
    EXPECT_EQ(mouse->x, f <= 3 ? 1 : 3) << f;
    EXPECT_EQ(mouse->down, down[f - 1]) << f;
  }
  EXPECT_FALSE(scripted_mouse(clicks, 7));
  ViewState s;
  EXPECT_EQ(describe_state(s), "tab=overview selected=none");
  s.tab = Tab::inspect;
  s.selected = InspectTarget{2, -1, "logits", Mode::chained};
  EXPECT_EQ(describe_state(s), "tab=inspect selected=step 2 layer model stage logits mode chained");
}

TEST(ViewOptions, ParsesViewsAndSizes) {
  std::string err;
  EXPECT_EQ(parse_view("drift", err)->tab, Tab::drift);
  const auto v = parse_view("inspect:0:model:logits:chained", err);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->target, (InspectTarget{0, -1, "logits", Mode::chained}));
  EXPECT_FALSE(parse_view("inspect:0:x:q:chained", err));
  EXPECT_FALSE(parse_view("bogus", err));
  EXPECT_FALSE(err.empty());
  EXPECT_EQ(parse_size("1600x1000"), (std::pair{1600, 1000}));
  EXPECT_FALSE(parse_size("16x10"));
  EXPECT_FALSE(parse_size("axb"));
}

TEST(TraceModel, OpensOneCaseOfAMergedFile) {
  FixtureSpec a, b;
  a.layers = 3;
  b.layers = 6;
  b.candidate = "second-cand";
  const std::string merged = (std::filesystem::temp_directory_path() / "vm_merged.h5").string();
  const auto cases =
      trace::merge_traces({write_fixture("vm_case_a.h5", a), write_fixture("vm_case_b.h5", b)}, merged, {});
  ASSERT_EQ(cases.size(), 2u);
  std::string err;
  for (int k = 0; k < 2; ++k) {
    const auto m = TraceModel::open(merged, err, k);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->info().candidate, cases[std::size_t(k)].candidate);
    EXPECT_EQ(m->layers().size(), m->info().candidate == "second-cand" ? 6u : 3u);
    // Tensors come from the case's own pools.
    const trace::TraceRow* row = m->row(0, Mode::isolated, 0, stage_name(0));
    ASSERT_TRUE(row);
    EXPECT_EQ(m->reader().ref_tensor(*row).numel(), 32);
  }
  for (int bad : {2, -1}) {
    err.clear();
    EXPECT_FALSE(TraceModel::open(merged, err, bad));
    EXPECT_NE(err.find("holds 2 case(s)"), std::string::npos) << err;
  }
  // A single trace is case 0 and nothing else.
  EXPECT_TRUE(TraceModel::open(write_fixture("vm_case_c.h5", a), err, 0)) << err;
  EXPECT_FALSE(TraceModel::open(write_fixture("vm_case_c.h5", a), err, 1));
}

TEST(TraceModel, OpensARunThatStoppedBeforeAnyStage) {
  const std::string path = (std::filesystem::temp_directory_path() / "vm_refused.h5").string();
  trace::write_stopped_trace(
      path, {}, {{"model_spec", "synthetic:qwen3-tiny"}, {"candidate", {{"name", "v1"}}}},
      {trace::kStatusRefused, 3, "REFUSED by the capability gate: v1\n  Missing: [QkNorm]"});
  std::string err;
  const auto m = TraceModel::open(path, err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(m->rows().empty());
  EXPECT_TRUE(m->steps().empty());
  EXPECT_TRUE(m->trace_case().stopped_early());
  EXPECT_NE(m->trace_case().reason.find("QkNorm"), std::string::npos);
  EXPECT_TRUE(m->info().verdict.rfind("REFUSED", 0) == 0) << m->info().verdict;
  // Comparing against it (either way round) has no cell to compare, and does not fail.
  const auto ran = TraceModel::open(write_fixture("vm_ran.h5", {}), err);
  ASSERT_TRUE(ran) << err;
  EXPECT_TRUE(compare_grids(*m, *ran).empty());
  for (const auto& g : compare_grids(*ran, *m)) EXPECT_EQ(g.worse + g.better, 0);
}

}  // namespace ds::view
