// --mode both: the culprit is the first stage whose local error breaks the policy, and
// everything downstream that fails only in chained mode is marked inherited.
#include <gtest/gtest.h>

#include "runner.h"

namespace ds {
namespace {

TEST(BothModes, SkipQkNormIsTheCulpritAndDownstreamFailuresAreInherited) {
  RunOptions o;
  o.model = "synthetic:qwen3-tiny";
  o.candidate = "mutant:skip-qk-norm";
  o.modes = {Mode::isolated, Mode::chained};
  o.decode_steps = 1;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitFailure);
  ASSERT_TRUE(r.first_failure);
  EXPECT_EQ(r.first_failure->key.stage, "q_norm");
  EXPECT_EQ(r.first_failure->key.layer, 0);
  EXPECT_EQ(r.first_failure->mode, Mode::isolated);
  EXPECT_GT(r.first_failure->m.mismatches, 0);

  int inherited = 0, chained_failures = 0;
  for (const auto& s : r.results) {
    if (s.mode == Mode::isolated) {
      // Locally only the QK-norm stages are wrong; every other kernel is correct.
      if (s.key.stage != "q_norm" && s.key.stage != "k_norm") {
        EXPECT_EQ(s.status, Status::pass) << s.key.stage << " layer " << s.key.layer;
      }
      continue;
    }
    if (!is_failure(s) || s.key.stage == "q_norm" || s.key.stage == "k_norm") continue;
    ++chained_failures;
    if (s.note.find("inherited") != std::string::npos) ++inherited;
  }
  EXPECT_GT(chained_failures, 10);
  EXPECT_EQ(inherited, chained_failures);
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST(DriftStart, PlantedCompoundingErrorIsLocatedAtItsFirstLayer) {
  RunOptions o;
  o.model = "synthetic:llama-deep-tiny";
  o.modes = {Mode::chained};
  for (const char* correct : {"cpu-f16", "simt"}) {
    o.candidate = correct;
    const RunReport r = run_parity(o, Policy::dtype_defaults());
    EXPECT_FALSE(r.drift_start.has_value()) << correct << ": " << r.drift;
    EXPECT_NE(r.drift.find("No drift"), std::string::npos);
  }
  o.candidate = "mutant:drift-from-layer3";
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  ASSERT_TRUE(r.drift_start.has_value()) << r.drift;
  EXPECT_EQ(*r.drift_start, 3);
  EXPECT_NE(r.drift.find("Drift begins at layer 3"), std::string::npos);
}

}  // namespace
}  // namespace ds
