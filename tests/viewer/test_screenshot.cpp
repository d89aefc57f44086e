// Renders real screenshots under xvfb-run and looks at their pixels: the failing cells of a
// mutant run must look failing, and bad files must exit 2 without crashing.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "heatmap_layout.h"
#include "screenshot_util.h"
#include "trace_model.h"

namespace ds::view {

using namespace shot;

TEST(Screenshot, MutantOverviewMarksFailingCells) {
  REQUIRE_XVFB();
  const fs::path dir = shot::dir();
  const std::string trace = (dir / "mut.h5").string(), png = (dir / "overview.png").string();
  fs::remove(trace);
  ASSERT_EQ(run(std::string(DRIFTSCOPE_EXE) +
                " run --model synthetic:qwen2-tiny --candidate mutant:chain-add-idx " +
                "--mode both --trace " + trace + " > /dev/null 2>&1"),
            1);  // the mutant run fails, by design
  ASSERT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + trace + " --screenshot " + png + " --size 1600x1000"),
            0);
  const Png img = load_png(png);
  ASSERT_EQ(img.w, 1600);
  ASSERT_EQ(img.h, 1000);

  std::string err;
  const auto m = TraceModel::open(trace, err);
  ASSERT_TRUE(m) << err;
  const OverviewLayout o = layout_overview(*m, 1600, 1000);
  const HeatmapLayout* iso = o.panel(Mode::isolated);
  ASSERT_TRUE(iso);
  // The mutant breaks residual_1 of layer 0 in isolated mode; attn_norm there passes.
  const Cell* fail = m->cell(0, Mode::isolated, 0, "residual_1");
  const Cell* pass = m->cell(0, Mode::isolated, 0, "attn_norm");
  ASSERT_TRUE(fail && pass);
  ASSERT_TRUE(fail->failing);
  ASSERT_FALSE(pass->failing);
  const Rect fr = iso->cell_rect(m->stage_index("residual_1"), m->layer_index(0));
  const Rect pr = iso->cell_rect(m->stage_index("attn_norm"), m->layer_index(0));
  const Rgba fc = img.at((fr.x0 + fr.x1) / 2, (fr.y0 + fr.y1) / 2);
  const Rgba pc = img.at((pr.x0 + pr.x1) / 2, (pr.y0 + pr.y1) / 2);
  // Hot fill for the failure, cool for the pass: the exact colours the view-model chose.
  EXPECT_EQ(fc, Rgba::unpack(fail->fill));
  EXPECT_EQ(pc, Rgba::unpack(pass->fill));
  EXPECT_GT(fc.r, fc.g + 80);
  EXPECT_LT(pc.r, pc.g);
  // The failing cell is outlined in the failure red; the passing cell's edge is its fill.
  const Rgba fb = img.at(fr.x0 + 1, (fr.y0 + fr.y1) / 2);
  const Rgba pb = img.at(pr.x0 + 1, (pr.y0 + pr.y1) / 2);
  EXPECT_EQ(fb, kFailBorder);
  EXPECT_NE(pb, kFailBorder);
}

TEST(Screenshot, OtherViewsRender) {
  REQUIRE_XVFB();
  const fs::path dir = shot::dir();
  const std::string trace = mutant_trace("mut_views.h5");
  ASSERT_TRUE(fs::exists(trace));
  for (const std::string view : {"drift", "inspect:0:0:residual_1:isolated", "compare"}) {
    const std::string png = (dir / ("view_" + std::to_string(view.size()) + ".png")).string();
    const std::string extra = view == "compare" ? " --compare " + trace : "";
    EXPECT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + trace + extra + " --view " + view + " --screenshot " +
                  png + " --size 1200x800"),
              0)
        << view;
    EXPECT_EQ(load_png(png).w, 1200) << view;
  }
}

// Clicks driven as a user's would be (scripted mouse under Xvfb): a stage cell opens the
// inspector on exactly that (step, layer, stage, mode); a cell with no stage selects nothing.
TEST(Screenshot, ClickingACellOpensItInTheInspector) {
  REQUIRE_XVFB();
  const fs::path dir = shot::dir();
  const std::string trace = mutant_trace("mut_clicks.h5");
  std::string err;
  const auto m = TraceModel::open(trace, err);
  ASSERT_TRUE(m) << err;
  const OverviewLayout o = layout_overview(*m, 1600, 1000);
  struct ClickCase {
    Mode mode;
    int layer;
    const char* stage;
    const char* expect;
    const char* launches;  // the kernels the inspector lists: the launch that produced the stage
  };
  const ClickCase cases[] = {
      {Mode::isolated, 0, "residual_1", "tab=inspect selected=step 0 layer 0 stage residual_1 mode isolated",
       "dsk_simt::mutant_chain_add_idx::gemv_kernel<float const*>"},  // the mutant's own GEMV source
      {Mode::chained, 1, "q", "tab=inspect selected=step 0 layer 1 stage q mode chained",
       "dsk_simt::fused_qkv_kernel<float const*>"},  // one launch makes q, k and v
      {Mode::isolated, 0, "final_norm", "tab=overview selected=none",
       ""},  // a model-level stage: no cell here
  };
  for (const ClickCase& c : cases) {
    const HeatmapLayout* map = o.panel(c.mode);
    ASSERT_TRUE(map);
    const Rect r = map->cell_rect(m->stage_index(c.stage), m->layer_index(c.layer));
    const std::string at =
        std::to_string(int((r.x0 + r.x1) / 2)) + "," + std::to_string(int((r.y0 + r.y1) / 2));
    const std::string out =
        output_of(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + trace + " --size 1600x1000 --click " + at +
                  " --print-state --screenshot " + (dir / "click.png").string());
    EXPECT_NE(out.find("state: " + std::string(c.expect) + "\nlaunches: " + c.launches + "\n"),
              std::string::npos)
        << "click at " << at << " on " << c.stage << ":\n"
        << out;
  }
  // Bad usage exits 2 before any window opens.
  const std::string exe = std::string(DRIFTSCOPE_VIEW_EXE) + " " + trace;
  EXPECT_EQ(run(exe + " --click 5 --screenshot x.png 2>/dev/null"), 2);
  EXPECT_EQ(run(exe + " --click 5,5 2>/dev/null"), 2);  // clicks script headless runs only
  EXPECT_EQ(run(exe + " --no-such-option 2>/dev/null"), 2);
}

// The Launches tab draws a kernel-time bar per layer from the trace's launch records.
TEST(Screenshot, LaunchesTabDrawsTimePerLayer) {
  REQUIRE_XVFB();
  const fs::path dir = shot::dir();
  const std::string trace = mutant_trace("mut_launches.h5");
  const std::string png = (dir / "launches_tab.png").string();
  ASSERT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + trace +
                " --view launches --size 1200x800 --screenshot " + png + " > /dev/null"),
            0);
  const Png img = load_png(png);
  ASSERT_EQ(img.w, 1200);
  int bar_pixels = 0;
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w; ++x) bar_pixels += img.at(float(x), float(y)) == kLaunchBarColour;
  EXPECT_GT(bar_pixels, 1000) << "no per-layer time bars drawn";
}

TEST(Screenshot, BadFilesExit2WithAMessage) {
  REQUIRE_XVFB();
  const fs::path dir = shot::dir();
  const std::string bad = (dir / "garbage.h5").string();
  std::ofstream(bad) << "not a trace at all";
  const std::string log = (dir / "bad.log").string();
  EXPECT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + bad + " --screenshot " + (dir / "bad.png").string() +
                " 2> " + log),
            2);
  std::ifstream in(log);
  const std::string msg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(msg.find("not an HDF5 file"), std::string::npos) << msg;
  EXPECT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + (dir / "missing.h5").string() +
                " --screenshot x.png 2>/dev/null"),
            2);
}

TEST(Screenshot, MergedFileShowsTheChosenCase) {
  REQUIRE_XVFB();
  const fs::path dir = shot::dir();
  const std::string traces = (dir / "matrix").string(), merged = (dir / "merged.h5").string();
  fs::remove_all(traces);
  ASSERT_EQ(
      run(std::string(DRIFTSCOPE_EXE) + " run --model synthetic:qwen2-tiny --candidate cpu-f16 " +
          "--candidate mutant:chain-add-idx --prompt-tokens 4 --trace-dir " + traces + " > /dev/null 2>&1"),
      1);  // the mutant case fails, by design
  ASSERT_EQ(run(std::string(DRIFTSCOPE_EXE) + " merge -o " + merged + " " + traces + "/case-0-of-2.h5 " +
                traces + "/case-1-of-2.h5 > /dev/null"),
            0);
  for (int k : {0, 1})
    EXPECT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + merged + " --case " + std::to_string(k) +
                  " --screenshot " + (dir / ("case" + std::to_string(k) + ".png")).string() + " > /dev/null"),
              0);
  const std::string log = (dir / "badcase.log").string();
  EXPECT_EQ(run(std::string(DRIFTSCOPE_VIEW_EXE) + " " + merged + " --case 2 2> " + log), 2);
  std::ifstream in(log);
  const std::string msg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(msg.find("--case 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 case(s)"), std::string::npos) << msg;
}

TEST(Screenshot, RefusedRunShowsWhyInEveryView) {
  REQUIRE_XVFB();
  const fs::path dir = shot::dir();
  const std::string refused = (dir / "refused.h5").string();
  fs::remove(refused);
  // cpu-f16-v1 lacks QK-norm: the gate refuses qwen3 before any stage; the trace says why.
  ASSERT_EQ(run(std::string(DRIFTSCOPE_EXE) + " run --model synthetic:qwen3-tiny --candidate cpu-f16-v1 " +
                "--prompt-tokens 4 --trace " + refused + " > /dev/null 2>&1"),
            3);
  ASSERT_TRUE(fs::exists(refused));
  const std::string mutant = mutant_trace("mut_vs_refused.h5");
  int n = 0;
  for (const std::string& args : {refused + " --view overview", refused + " --view drift",
                                  refused + " --view inspect:0:0:residual_1:isolated",
                                  refused + " --compare " + mutant + " --view compare",
                                  mutant + " --compare " + refused + " --view compare"}) {
    const std::string png = (dir / ("refused_" + std::to_string(n++) + ".png")).string();
    fs::remove(png);
    EXPECT_EQ(run(xvfb() + DRIFTSCOPE_VIEW_EXE + " " + args + " --screenshot " + png + " --size 1000x700"), 0)
        << args;
    EXPECT_EQ(load_png(png).w, 1000) << args;
  }
}

}  // namespace ds::view
