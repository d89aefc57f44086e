// `driftscope run/report/diff` end to end: re-judging under a stricter policy, trace diffs,
// JUnit that validates as XML. Runs the real CLI on tiny synthetic models.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trace_reader.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int rc;
  std::string out;
};

Result sh(const std::string& args) {
  static int calls = 0;
  const fs::path out =
      fs::temp_directory_path() / ("ds_sh_" + std::to_string(::getpid()) + "_" + std::to_string(calls++));
  const int st =
      std::system((std::string(DRIFTSCOPE_BIN) + " " + args + " > " + out.string() + " 2>&1").c_str());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, ss.str()};
}

class ReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("ds_report_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ASSERT_EQ(
        sh("run -m synthetic:qwen2-tiny -c cpu-f16 --mode both --decode-steps 1 -o " + path("good.h5")).rc,
        0);
    ASSERT_EQ(sh("run -m synthetic:qwen2-tiny -c mutant:chain-add-idx --mode both --decode-steps 1 -o " +
                 path("bad.h5"))
                  .rc,
              1);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  static fs::path dir_;
};
fs::path ReportTest::dir_;

TEST_F(ReportTest, SamePolicyReproducesTheRun) {
  const Result r = sh("report " + path("good.h5"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("PASS:"), std::string::npos);
  const Result b = sh("report " + path("bad.h5"));
  EXPECT_EQ(b.rc, 1);
  EXPECT_NE(b.out.find("first failing stage is residual_1 of layer 0"), std::string::npos) << b.out;
}

TEST_F(ReportTest, StricterPolicyTurnsAPassingTraceIntoAFailureNamingStages) {
  const Result r = sh("report " + path("good.h5") +
                      " --only-failures --policy " DRIFTSCOPE_FIXTURES "/policies/strict.yaml");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("embed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL"), std::string::npos);
}

TEST_F(ReportTest, BadPolicyIsAUsageError) {
  std::ofstream(path("bad.yaml")) << "rules:\n  - stage: q\n    chek: x\n";
  const Result r = sh("report " + path("good.h5") + " --policy " + path("bad.yaml"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("bad.yaml:3: field 'chek'"), std::string::npos) << r.out;
}

// A trace cut short (a disk that filled, a copy that stopped) is a clear error, exit 2, never a
// signal; the reader's side of it is test_traces' (TraceIo), run under ASan too.
TEST_F(ReportTest, TruncatedTracesAreAnErrorNotACrash) {
  const auto size = fs::file_size(path("good.h5"));
  for (double frac : {0.9, 0.5, 0.1, 0.01}) {
    const std::string cut = path("cut.h5");
    fs::copy_file(path("good.h5"), cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, static_cast<std::uintmax_t>(static_cast<double>(size) * frac));
    const Result r = sh("report " + cut);
    EXPECT_EQ(r.rc, 2) << frac << ": " << r.out;
    EXPECT_NE(r.out.find("cut.h5"), std::string::npos) << frac << ": " << r.out;
  }
}

TEST_F(ReportTest, DiffOfIdenticalTracesPasses) {
  const Result r = sh("diff " + path("good.h5") + " " + path("good.h5"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("NO REGRESSION"), std::string::npos);
}

TEST_F(ReportTest, DiffFlagsAPlantedRegression) {
  const Result r = sh("diff " + path("good.h5") + " " + path("bad.h5"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("new-failure"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("residual_1"), std::string::npos);
  EXPECT_NE(r.out.find("error-grew"), std::string::npos);
  // A run with fewer decode steps is missing step 1: a regression, said in one line rather than
  // one "disappeared" line per stage of the step.
  ASSERT_EQ(sh("run -m synthetic:qwen2-tiny -c cpu-f16 --mode both -o " + path("short.h5")).rc, 0);
  const Result d = sh("diff " + path("good.h5") + " " + path("short.h5"));
  EXPECT_EQ(d.rc, 1);
  EXPECT_NE(d.out.find("steps-gone"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("disappeared"), std::string::npos) << d.out;
}

TEST_F(ReportTest, WritersProduceValidJUnitJsonAndMarkdown) {
  // 132 stages and the run's own `no-drift` testcase (the chain-add bug's drift, located).
  const Result r = sh("report " + path("bad.h5") + " --junit " + path("j.xml") + " --json " + path("j.json") +
                      " --markdown " + path("j.md"));
  EXPECT_EQ(r.rc, 1);
  const std::string check =
      "/usr/bin/python3 -c \"import json, sys, xml.etree.ElementTree as E; t = "
      "E.parse(sys.argv[1]).getroot(); "
      "cases = t.findall('.//testcase'); fails = [c for c in cases if c.find('failure') is not None]; "
      "assert len(cases) == 133 and len(fails) > 0, (len(cases), len(fails)); "
      "assert any(c.get('name') == 'no-drift' and c.find('failure') is not None for c in cases); "
      "assert all(f.find('failure').get('message') for f in fails); "
      "j = json.load(open(sys.argv[2])); assert j['exit_code'] == 1 and len(j['stages']) == 132\" " +
      path("j.xml") + " " + path("j.json");
  EXPECT_EQ(std::system(check.c_str()), 0);
  std::ifstream md(path("j.md"));
  std::stringstream ss;
  ss << md.rdbuf();
  EXPECT_NE(ss.str().find("| 0 | 0 | `residual_1` |"), std::string::npos) << ss.str();
  // run writes the same files.
  EXPECT_EQ(sh("run -m synthetic:qwen2-tiny -c cpu-f16 --junit " + path("r.xml")).rc, 0);
  EXPECT_EQ(std::system(("/usr/bin/python3 -c \"import xml.etree.ElementTree as E; E.parse('" +
                         path("r.xml") + "')\"")
                            .c_str()),
            0);
}

TEST_F(ReportTest, CaptureFilterKeepsOnlyTheRequestedTensors) {
  ASSERT_EQ(sh("run -m synthetic:qwen2-tiny -c cpu-f16 --capture-stages \"q|k\" --capture-layers 1:1 -o " +
               path("cap.h5"))
                .rc,
            0);
  const ds::trace::TraceReader t(path("cap.h5"));
  int with_tensors = 0;
  for (const auto& row : t.rows()) {
    const bool want =
        (row.result.key.stage == "q" || row.result.key.stage == "k") && row.result.key.layer == 1;
    EXPECT_EQ(t.has_tensors(row), want) << row.result.key.stage << " " << row.result.key.layer;
    with_tensors += t.has_tensors(row);
  }
  EXPECT_EQ(with_tensors, 2);
  EXPECT_EQ(t.attr("capture_stages"), "q|k");
  EXPECT_EQ(sh("run -m synthetic:qwen2-tiny --capture-layers 3:1").rc, 2);
  EXPECT_EQ(sh("run -m synthetic:qwen2-tiny --capture-stages \"(\"").rc, 2);
}

}  // namespace
