// driftscope replay: one failing stage re-run from the inputs stored in the trace reproduces
// the stored metrics; the same inputs through a fixed candidate pass.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>

#include "replay.h"
#include "runner.h"
#include "trace_merge.h"

namespace ds {
namespace {

TEST(Replay, FailingMutantStageReproducesAndTheFixedKernelPasses) {
  const auto path = std::filesystem::temp_directory_path() / fmt::format("ds_replay_{}.h5", getpid());
  RunOptions o;
  o.model = "synthetic:qwen2-tiny";
  o.candidate = "mutant:chain-add-idx";
  o.modes = {Mode::isolated, Mode::chained};
  o.decode_steps = 1;
  o.trace_path = path.string();
  ASSERT_EQ(run_parity(o, Policy::dtype_defaults()).exit_code, kExitFailure);

  for (const auto& [step, layer, stage, mode] :
       {std::tuple{0, 0, "residual_1", Mode::isolated}, std::tuple{1, 1, "residual_1", Mode::isolated},
        std::tuple{0, 1, "attn", Mode::chained}}) {
    ReplayRequest req{path.string(), step, layer, stage, mode, ""};
    const ReplayResult r = replay_stage(req, Policy::dtype_defaults());
    EXPECT_TRUE(r.reproduces) << stage;
    EXPECT_EQ(r.replayed.m.max_abs, r.stored.m.max_abs) << stage;
    EXPECT_EQ(r.replayed.m.mismatches, r.stored.m.mismatches) << stage;
    EXPECT_EQ(r.replayed.status, r.stored.status);
  }
  ReplayRequest fixed{path.string(), 0, 0, "residual_1", Mode::isolated, "simt"};
  EXPECT_EQ(replay_stage(fixed, Policy::dtype_defaults()).replayed.status, Status::pass);
  ReplayRequest not_captured{path.string(), 0, 0, "q", Mode::isolated, ""};
  EXPECT_THROW(replay_stage(not_captured, Policy::dtype_defaults()), InputError);
  std::filesystem::remove(path);
}

TEST(Replay, OneCaseOfAMergedFile) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("ds_replay_case_{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.h5").string(), mutant = (dir / "mutant.h5").string(),
                    refused = (dir / "refused.h5").string(), merged = (dir / "merged.h5").string();
  RunOptions o;
  o.model = "synthetic:qwen2-tiny";
  o.candidate = "cpu-f16";
  o.trace_path = good;
  ASSERT_EQ(run_parity(o, Policy::dtype_defaults()).exit_code, kExitParity);
  o.candidate = "mutant:chain-add-idx";
  o.trace_path = mutant;
  ASSERT_EQ(run_parity(o, Policy::dtype_defaults()).exit_code, kExitFailure);
  o.model = "synthetic:qwen3-tiny";
  o.candidate = "cpu-f16-v1";
  o.trace_path = refused;
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), GateRefusal);
  const auto cases = trace::merge_traces({good, mutant, refused}, merged, {});
  ASSERT_EQ(cases.size(), 3u);
  int k_good = -1, k_mutant = -1, k_refused = -1;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    if (cases[k].candidate == "cpu-f16") k_good = int(k);
    if (cases[k].candidate == "mutant:chain-add-idx") k_mutant = int(k);
    if (cases[k].candidate == "cpu-f16-v1") k_refused = int(k);
  }

  ReplayRequest req{merged, 0, 0, "residual_1", Mode::isolated, ""};
  req.case_index = k_mutant;
  const ReplayResult r = replay_stage(req, Policy::dtype_defaults());
  EXPECT_TRUE(r.reproduces);
  EXPECT_EQ(r.replayed.m.max_abs, r.stored.m.max_abs);
  EXPECT_EQ(r.replayed.status, Status::fail);

  auto error_of = [&](int k) {
    ReplayRequest q = req;
    q.case_index = k;
    try {
      replay_stage(q, Policy::dtype_defaults());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(-1).find("--case K"), std::string::npos) << error_of(-1);  // merged, no --case
  EXPECT_NE(error_of(3).find("holds 3 case(s)"), std::string::npos) << error_of(3);
  EXPECT_NE(error_of(k_refused).find("nothing to replay"), std::string::npos) << error_of(k_refused);
  // The passing case stored no inputs: the usual error, naming the case.
  EXPECT_NE(error_of(k_good).find("not captured"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ds
