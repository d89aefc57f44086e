// Crash isolation: a candidate that dies is reported as `crashed` at the stage it was in, the
// harness survives and exits 4, and the trace keeps everything judged before.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "child_candidate.h"
#include "runner.h"
#include "trace_reader.h"

namespace ds {
namespace {

struct CrashCase {
  const char* candidate;
  const char* why;  // expected in the verdict
};
void PrintTo(const CrashCase& c, std::ostream* os) { *os << c.candidate; }

class CrashIsolation : public testing::TestWithParam<CrashCase> {};

TEST_P(CrashIsolation, CrashedAtLayer1WithLayer0Intact) {
  RunOptions o;
  o.model = "synthetic:qwen2-tiny";
  o.candidate = GetParam().candidate;
  o.timeout_s = 2;
  o.trace_path = (std::filesystem::temp_directory_path() / fmt::format("ds_crash_{}.h5", getpid())).string();
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitCrashed);
  EXPECT_NE(r.verdict.find(GetParam().why), std::string::npos) << r.verdict;
  ASSERT_FALSE(r.results.empty());
  const StageResult& last = r.results.back();
  EXPECT_EQ(last.status, Status::crashed);
  EXPECT_EQ(last.key.layer, 1);
  EXPECT_EQ(last.key.stage, "attn");

  trace::TraceReader t(o.trace_path);
  int layer0 = 0;
  for (const auto& row : t.rows()) {
    if (row.result.key.layer == 0) {
      ++layer0;
      EXPECT_EQ(row.result.status, Status::pass);
      EXPECT_TRUE(t.has_tensors(row));
    }
  }
  EXPECT_EQ(layer0, 15);  // every stage of layer 0
  EXPECT_EQ(t.rows().back().result.status, Status::crashed);
  std::filesystem::remove(o.trace_path);
}

INSTANTIATE_TEST_SUITE_P(Runner, CrashIsolation,
                         testing::Values(CrashCase{"selftest:segv-layer1", "signal 11"},
                                         CrashCase{"selftest:abort-layer1", "signal 6"},
                                         CrashCase{"selftest:hang-layer1", "hung"}));

// A candidate whose load() never returns (a driver waiting forever): the child's load is
// bounded by the same timeout as its steps.
class HangingLoad final : public Candidate {
 public:
  std::string name() const override { return "hanging-load"; }
  std::string description() const override { return "load() never returns"; }
  DType storage_dtype() const override { return DType::f32; }
  OpSet capabilities() const override { return {}; }
  std::vector<KernelStep> plan(const ModelConfig&, BlockKind) const override { return {}; }
  void load(const ModelConfig&, const WeightStore&) override {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  void run(const KernelStep&, const StepContext&, const TensorMap&, TensorMap&) override {}
};

TEST(CrashIsolation, HangingLoadIsACrashWithinTheTimeout) {
  ChildCandidate child(std::make_unique<HangingLoad>(), 0.5);
  const auto start = std::chrono::steady_clock::now();
  try {
    child.load(ModelConfig{}, WeightStore{});
    FAIL() << "load() returned";
  } catch (const CandidateCrash& e) {
    EXPECT_EQ(e.step_name, "load");
    EXPECT_NE(std::string(e.what()).find("hung"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(CrashIsolation, DefaultTimeoutIsFinite) {
  const RunOptions o;
  EXPECT_GT(o.timeout_s, 0);
}

}  // namespace
}  // namespace ds
