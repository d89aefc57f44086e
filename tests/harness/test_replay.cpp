// driftscope replay: one failing stage re-run from the inputs stored in the trace reproduces
// the stored metrics; the same inputs through a fixed candidate pass.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>

#include "replay.h"
#include "runner.h"

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

}  // namespace
}  // namespace ds
