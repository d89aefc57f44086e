// A run stopped before any stage (gate refusal, bad input) leaves a stub trace: readers see a
// finished case with no rows that says why; merge keeps it and marks it; diff compares stops.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "trace_diff.h"
#include "trace_merge.h"
#include "trace_reader.h"
#include "trace_stub.h"
#include "trace_writer.h"

namespace ds::trace {
namespace {

namespace fs = std::filesystem;

std::string stub_path(const std::string& name) {
  return (fs::temp_directory_path() / (std::to_string(::getpid()) + "_stub_" + name)).string();
}

nlohmann::json run_json(const std::string& candidate, std::uint64_t seed) {
  return {{"model_spec", "synthetic:qwen3-tiny"}, {"candidate", {{"name", candidate}}}, {"seed", seed}};
}

const StoppedRun kRefusal{kStatusRefused,
                          3,
                          "REFUSED by the capability gate: v1 cannot serve qwen3-tiny (qwen3)\n"
                          "  Missing:          [QkNorm]",
                          "[RoPE, QkNorm]",
                          "[RoPE]",
                          "[QkNorm]"};

TEST(StoppedTrace, ResultRecordsStatusExitCodeReasonAndOps) {
  const nlohmann::json r = stopped_result(kRefusal);
  EXPECT_EQ(r["status"], "refused");
  EXPECT_EQ(r["exit_code"], 3);
  EXPECT_EQ(r["verdict"], "REFUSED by the capability gate: v1 cannot serve qwen3-tiny (qwen3)");
  EXPECT_EQ(r["reason"], kRefusal.reason);
  EXPECT_EQ(r["ops"]["missing"], "[QkNorm]");
  const nlohmann::json bad = stopped_result({kStatusBadInput, 2, "--model: x.gguf: no such file"});
  EXPECT_EQ(bad["verdict"], "BAD-INPUT: --model: x.gguf: no such file");
  EXPECT_FALSE(bad.contains("ops"));  // the gate never ran
}

TEST(StoppedTrace, ReaderSeesAFinishedCaseWithNoRowsAndItsReason) {
  const std::string path = stub_path("refused.h5");
  write_stopped_trace(path, {{"tool_version", "test"}}, run_json("v1", 4), kRefusal);
  const TraceReader r(path);
  EXPECT_TRUE(r.rows().empty());
  EXPECT_EQ(r.attr("tool_version"), "test");
  const TraceCase& c = r.trace_case();
  EXPECT_TRUE(c.finished);
  EXPECT_TRUE(c.stopped_early());
  EXPECT_EQ(c.status, "refused");
  EXPECT_EQ(c.exit_code, 3);
  EXPECT_EQ(c.reason, kRefusal.reason);
  EXPECT_EQ(c.key(), "synthetic:qwen3-tiny x v1 x seed 4");
  EXPECT_FALSE(r.captured_step(0, 0, Mode::isolated, "q"));
  fs::remove(path);
}

TEST(StoppedTrace, ATraceWithoutStatusRan) {
  // Traces written before stopped runs existed have no "status": they ran.
  const std::string path = stub_path("old.h5");
  TraceWriter(path, {}, run_json("cpu-f16", 0)).finish({{"verdict", "PASS: 3 stages"}, {"exit_code", 0}});
  const TraceCase c = TraceReader(path).trace_case();
  EXPECT_EQ(c.status, kStatusRan);
  EXPECT_FALSE(c.stopped_early());
  fs::remove(path);
}

TEST(StoppedTrace, MergeKeepsItAndMarksItInTheIndex) {
  const std::string stub = stub_path("m_refused.h5"), ran = stub_path("m_ran.h5"), out = stub_path("merged.h5");
  write_stopped_trace(stub, {}, run_json("v1", 0), kRefusal);
  TraceWriter(ran, {}, run_json("cpu-f16", 0))
      .finish({{"status", kStatusRan}, {"verdict", "PASS: 3 stages"}, {"exit_code", 0}});
  const auto cases = merge_traces({ran, stub}, out, {});
  ASSERT_EQ(cases.size(), 2u);
  const hid_t f = open_trace_file(out);
  const hid_t d = H5Dopen2(f, kCaseIndex, H5P_DEFAULT);
  std::vector<CaseIndexRow> rows(2);
  const hid_t t = case_index_type();
  ASSERT_GE(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), 0);
  H5Tclose(t);
  H5Dclose(d);
  H5Fclose(f);
  bool saw_stub = false;
  for (const auto& r : rows) {
    if (std::strcmp(r.candidate, "v1") != 0) {
      EXPECT_STREQ(r.status, "ran");
      continue;
    }
    saw_stub = true;
    EXPECT_STREQ(r.status, "refused");
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.finished, 1);
    EXPECT_EQ(std::string(r.verdict).rfind("REFUSED", 0), 0u) << r.verdict;
  }
  EXPECT_TRUE(saw_stub);
  for (const auto& c : list_cases(out)) EXPECT_EQ(c.stopped_early(), c.candidate == "v1");
  for (const auto& p : {stub, ran, out}) fs::remove(p);
}

TEST(StoppedTrace, DiffOfStopsRegressesOnlyWhenTheCurrentRunStopped) {
  TraceCase ran, refused;
  ran.finished = refused.finished = true;
  ran.status = kStatusRan;
  ran.exit_code = 0;
  refused.status = kStatusRefused;
  refused.exit_code = 3;
  refused.reason = kRefusal.reason;
  EXPECT_FALSE(compare_stops(ran, ran));
  const auto now_stops = compare_stops(ran, refused);
  ASSERT_TRUE(now_stops);
  EXPECT_TRUE(now_stops->regression);
  EXPECT_EQ(now_stops->kind, "case-stopped");
  EXPECT_EQ(now_stops->reason, kRefusal.reason);
  const auto now_runs = compare_stops(refused, ran);
  ASSERT_TRUE(now_runs);
  EXPECT_FALSE(now_runs->regression);
  EXPECT_EQ(now_runs->kind, "case-now-runs");
  EXPECT_FALSE(compare_stops(refused, refused)->regression);
  TraceCase unfinished;  // a killed run is not a stop: its flushed stages are diffed
  EXPECT_FALSE(compare_stops(unfinished, ran));
  // A case that now starts but is killed is INCOMPLETE: never better than the stop before it.
  const auto now_incomplete = compare_stops(refused, unfinished);
  ASSERT_TRUE(now_incomplete);
  EXPECT_TRUE(now_incomplete->regression);
}

}  // namespace
}  // namespace ds::trace
