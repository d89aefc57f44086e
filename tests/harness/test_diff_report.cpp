// diff's per-stage summary (one change per stage, the first regression first, inherited drift
// told apart) and the text escaping its reports share with run's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "diff_report.h"
#include "report_text.h"
#include "trace_reader.h"
#include "trace_writer.h"

namespace {

using namespace ds;
namespace fs = std::filesystem;

struct CellCase {
  const char* name;
  std::string raw, cell;
};

class MarkdownCell : public testing::TestWithParam<CellCase> {};

TEST_P(MarkdownCell, EscapesWithoutDroppingAnything) {
  EXPECT_EQ(markdown_cell(GetParam().raw), GetParam().cell);
}

INSTANTIATE_TEST_SUITE_P(Notes, MarkdownCell,
                         testing::Values(CellCase{"plain_text_unchanged", "max diff 0.5", "max diff 0.5"},
                                         CellCase{"pipe_escaped", "max |diff| 0.5", "max \\|diff\\| 0.5"},
                                         CellCase{"backslash_before_pipe_kept_literal", "a\\|b", "a\\\\\\|b"},
                                         CellCase{"lone_backslash_unchanged", "C:\\dir", "C:\\dir"},
                                         CellCase{"newline_is_a_break", "one\ntwo", "one<br>two"},
                                         CellCase{"crlf_is_one_break", "one\r\ntwo", "one<br>two"},
                                         CellCase{"empty_stays_empty", "", ""}),
                         [](const testing::TestParamInfo<CellCase>& p) { return std::string(p.param.name); });

TEST(XmlEscape, EscapesMarkupAndDropsForbiddenControls) {
  EXPECT_EQ(xml_escape("a<b & \"c\"\x01"), "a&lt;b &amp; &quot;c&quot;");
}

// A stage result of step 0; `bad` makes it a tolerance failure with no note, as policies leave.
StageResult stage(int layer, const std::string& name, Mode mode, bool bad, double max_abs,
                  std::uint64_t hash) {
  StageResult r;
  r.key = {0, layer, name};
  r.mode = mode;
  r.status = bad ? Status::fail : Status::pass;
  r.shape = {2, 2};
  r.m.numel = 4;
  r.m.max_abs = max_abs;
  r.m.rms = max_abs / 2;
  r.m.mismatches = bad ? 1 : 0;
  r.cand_hash = hash;
  return r;
}

void write_trace(const fs::path& p, const std::vector<StageResult>& rows) {
  trace::TraceWriter w(p.string(), {{"tool_version", "t"}}, {{"model_spec", "m"}, {"seed", 0}});
  for (const auto& r : rows) w.append(r, nullptr, nullptr);
  w.finish({{"exit_code", 0}});
}

class DiffSummary : public testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / fs::path("ds-diff-summary-" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(DiffSummary, OneChangePerStageTheCulpritFirstItsDownstreamInherited) {
  const auto iso = Mode::isolated, ch = Mode::chained;
  // Baseline: every stage passes. Current: `k` of layer 0 breaks in both modes; `v` downstream
  // fails only chained (fed k's drift); `q` changed its bits alone; `attn` of layer 1 grew its error.
  // (Catalog names: a trace naming any other stage is refused.)
  write_trace(dir / "base.h5", {stage(0, "q", iso, false, 0.01, 1), stage(0, "k", iso, false, 0.01, 2),
                                stage(0, "v", iso, false, 0.01, 3), stage(1, "attn", iso, false, 0.01, 4),
                                stage(0, "q", ch, false, 0.01, 1), stage(0, "k", ch, false, 0.01, 2),
                                stage(0, "v", ch, false, 0.01, 3), stage(1, "attn", ch, false, 0.01, 4)});
  write_trace(dir / "cur.h5", {stage(0, "q", iso, false, 0.01, 9), stage(0, "k", iso, true, 5, 2),
                               stage(0, "v", iso, false, 0.01, 3), stage(1, "attn", iso, false, 0.05, 4),
                               stage(0, "q", ch, false, 0.01, 9), stage(0, "k", ch, true, 5, 8),
                               stage(0, "v", ch, true, 4, 7), stage(1, "attn", ch, false, 0.01, 4)});
  const trace::TraceReader base((dir / "base.h5").string()), cur((dir / "cur.h5").string());
  const CaseDiff d = summarise_diff(base, cur, {});
  ASSERT_EQ(d.changes.size(), 4u);
  struct Want {
    const char* stage;
    int layer;
    std::string_view change;
    bool regression, inherited;
    std::size_t modes;
  };
  const Want want[] = {{"k", 0, "new-failure", true, false, 2},
                       {"v", 0, "new-failure", true, true, 1},
                       {"attn", 1, "error-grew", true, false, 1},
                       {"q", 0, "bits-changed", false, false, 2}};
  for (std::size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(want[i].stage);
    const StageChange& c = d.changes[i];
    EXPECT_EQ(c.key.stage, want[i].stage);
    EXPECT_EQ(c.key.layer, want[i].layer);
    EXPECT_EQ(trace::finding_name(c.worst), want[i].change);
    EXPECT_EQ(c.regression, want[i].regression);
    EXPECT_EQ(c.inherited, want[i].inherited);
    EXPECT_EQ(c.modes.size(), want[i].modes);
  }
  ASSERT_NE(d.first_regression(), nullptr);
  EXPECT_EQ(d.first_regression()->key.stage, "k");
  EXPECT_EQ(stage_where(*d.first_regression()), "step 0 layer 0 k (isolated, chained)");
  // k's chained lane also grew and changed bits: one line says so rather than three.
  EXPECT_EQ(d.first_regression()->also, (std::vector<std::string>{"error-grew", "bits-changed"}));
  // No policy note: the evidence says why from the metrics.
  EXPECT_NE(d.first_regression()->evidence.find("was pass, now fail: 1 of 4 elements outside"),
            std::string::npos)
      << d.first_regression()->evidence;
  EXPECT_EQ(d.regressions, 3u);
  EXPECT_TRUE(d.regressed);

  DiffOutcome out{"base.h5", "cur.h5", {d}, {}, {}};
  const nlohmann::json j = diff_json(out);
  EXPECT_EQ(j["first_regression"]["stage"], "k");
  EXPECT_EQ(j["cases"][0]["changes"][0]["stage"], "k");
  const std::string md = diff_markdown(out);
  EXPECT_NE(md.find("First regression: **step 0 layer 0 k (isolated, chained)** (new-failure)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("(inherited from an earlier stage)"), std::string::npos) << md;
  EXPECT_NE(md.find("1 more stage(s) changed their output bits"), std::string::npos) << md;
}

}  // namespace
