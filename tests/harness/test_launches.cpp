// Launch records: a SIMT candidate's run holds one record per kernel launch, filed under the plan
// step that made it and that step's stages, in the trace and in the report, with or without the
// candidate's child process.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <tuple>

#include "registry.h"
#include "stage_catalog.h"
#include "runner.h"
#include "trace_reader.h"

namespace ds {
namespace {

struct LaunchCase {
  const char* name;
  const char* candidate;
  bool isolate_process;
  int exit_code;  // a failing run records its launches as a passing one does
};
void PrintTo(const LaunchCase& c, std::ostream* os) { *os << c.name; }

class LaunchRecords : public testing::TestWithParam<LaunchCase> {};

TEST_P(LaunchRecords, OneRecordPerPlanStepNamingItsStages) {
  RunOptions o;
  o.model = "synthetic:qwen2-tiny";
  o.candidate = GetParam().candidate;
  o.modes = {Mode::isolated, Mode::chained};
  o.prompt_tokens = 3;
  o.decode_steps = 1;
  o.isolate_process = GetParam().isolate_process;
  o.trace_path = (std::filesystem::temp_directory_path() /
                  fmt::format("ds_launches_{}_{}.h5", GetParam().name, getpid()))
                     .string();
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  ASSERT_EQ(r.exit_code, GetParam().exit_code) << r.verdict;
  const auto stored = trace::TraceReader(o.trace_path).launches();
  std::filesystem::remove(o.trace_path);
  ASSERT_TRUE(stored.has_value());
  ASSERT_EQ(stored->size(), r.launches.size());

  // What the plan says each (model step, layer, lane) launches: every step of kernels/ is one launch.
  const ModelConfig cfg = load_config_spec(o.model, 0);
  const CandidatePtr cand = make_candidate(o.candidate);
  std::vector<KernelStep> model_level = cand->plan(cfg, BlockKind::embed);
  for (auto& s : cand->plan(cfg, BlockKind::head)) model_level.push_back(s);
  std::map<std::tuple<int, int, int>, std::vector<const StepLaunch*>> seen;
  for (const StepLaunch& l : *stored) seen[{l.step, l.layer, int(l.mode)}].push_back(&l);
  std::size_t expected_total = 0;
  for (int step = 0; step <= o.decode_steps; ++step)
    for (Mode mode : o.modes)
      for (int layer = kModelLayer; layer < cfg.n_layers; ++layer) {
        const std::vector<KernelStep> plan =
            layer == kModelLayer ? model_level : cand->plan(cfg, cfg.block_kind(layer));
        const auto& got = seen[{step, layer, int(mode)}];
        SCOPED_TRACE(fmt::format("step {} layer {} {}", step, layer, mode_name(mode)));
        ASSERT_EQ(got.size(), plan.size());
        for (std::size_t k = 0; k < plan.size(); ++k) {
          EXPECT_EQ(got[k]->kernel_step, plan[k].name);
          EXPECT_EQ(got[k]->stages, plan[k].outputs);
          EXPECT_EQ(got[k]->launch.backend, "simt");
          EXPECT_TRUE(got[k]->launch.emulated);
          EXPECT_EQ(got[k]->launch.kernel.rfind("dsk_simt::", 0), 0u) << got[k]->launch.kernel;
          EXPECT_GT(got[k]->launch.duration_us, 0.0);
          EXPECT_GE(got[k]->launch.grid[0], 1u);
          EXPECT_GE(got[k]->launch.block[0], 32u);
        }
        expected_total += plan.size();
      }
  EXPECT_EQ(stored->size(), expected_total);
}

INSTANTIATE_TEST_SUITE_P(Runs, LaunchRecords,
                         testing::Values(LaunchCase{"simt_in_child", "simt", true, kExitParity},
                                         LaunchCase{"simt_in_process", "simt", false, kExitParity},
                                         LaunchCase{"mutant_in_child", "mutant:chain-add-idx", true,
                                                    kExitFailure}),
                         [](const auto& info) { return std::string(info.param.name); });

// On a GPU the cuda candidate's records come from CUPTI: GPU time, not emulated, dsk_cuda kernels.
TEST(LaunchRecords, CudaCandidateRecordsGpuTimeThroughCupti) {
#if !defined(DRIFTSCOPE_HAVE_CUPTI)
  GTEST_SKIP() << "this build has no CUPTI (no CUDA toolkit with CUPTI at configure time)";
#else
  if (const std::string why = make_candidate("cuda")->unavailable(); !why.empty())
    GTEST_SKIP() << "the CUPTI path is built and linked, but cannot run here: " << why;
  RunOptions o;
  o.candidate = "cuda";
  o.modes = {Mode::isolated, Mode::chained};
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  ASSERT_EQ(r.exit_code, kExitParity) << r.verdict;
  ASSERT_FALSE(r.launches.empty());
  for (const StepLaunch& l : r.launches) {
    EXPECT_EQ(l.launch.backend, "cuda");
    EXPECT_FALSE(l.launch.emulated);
    EXPECT_EQ(l.launch.kernel.rfind("dsk_cuda::", 0), 0u) << l.launch.kernel;
    EXPECT_GT(l.launch.duration_us, 0.0);
  }
#endif
}

TEST(LaunchRecords, PlainCandidateLaunchesNothing) {
  RunOptions o;
  o.candidate = "cpu-f16";
  o.trace_path =
      (std::filesystem::temp_directory_path() / fmt::format("ds_launches_cpu_{}.h5", getpid())).string();
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_TRUE(r.launches.empty());
  const auto stored = trace::TraceReader(o.trace_path).launches();
  std::filesystem::remove(o.trace_path);
  ASSERT_TRUE(stored.has_value());  // the table exists, empty: not an older trace
  EXPECT_TRUE(stored->empty());
}

}  // namespace
}  // namespace ds
