// run --probe: every probe on every tiny preset with the correct kernels, both modes, is a pass
// (the probes raise no false alarm) or, aimed at a block kind the preset lacks, skipped; each
// records itself in what the run reports.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "probes.h"
#include "runner.h"

namespace ds {
namespace {

struct ProbeCase {
  std::string preset, probe;
};
void PrintTo(const ProbeCase& c, std::ostream* os) { *os << c.preset << " --probe " << c.probe; }
class Probes : public testing::TestWithParam<ProbeCase> {};

TEST_P(Probes, CorrectKernelsPassInBothModes) {
  RunOptions o;
  o.model = "synthetic:" + GetParam().preset;
  o.candidate = "simt";
  o.modes = {Mode::isolated, Mode::chained};
  o.probe = GetParam().probe;
  o.isolate_process = false;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  EXPECT_EQ(r.probe, GetParam().probe);
  // A probe aimed at a block kind the model lacks is skipped with its reason, judging nothing: of
  // these presets only qwen35-tiny has Gated DeltaNet layers.
  const bool aimless = GetParam().probe == "tiny-gdn-qk" && GetParam().preset != "qwen35-tiny";
  EXPECT_EQ(!r.skipped.empty(), aimless) << r.skipped;
  EXPECT_EQ(r.results.empty(), aimless);
  // long-positions runs its decode step alone, past 2048 (the preset's context allowing).
  if (GetParam().probe == "long-positions") {
    const int context = load_config_spec(o.model, 0).max_positions;
    EXPECT_EQ(r.from_step, 1);
    EXPECT_EQ(r.prompt_tokens, context > 0 ? std::min(2050, context - 2) : 2050);
    for (const StageResult& s : r.results) EXPECT_GE(s.key.step, 1) << s.key.stage;
  }
}

std::vector<ProbeCase> probe_cases() {
  std::vector<ProbeCase> out;
  for (const char* preset : {"llama-tiny", "llama3-tiny", "qwen2-bias-tiny", "qwen3-tiny", "gpt2-tiny",
                             "qwen35-tiny", "qwen2-tails-tiny"})
    for (const Probe& p : probes()) out.push_back({preset, std::string(p.name)});
  return out;
}

INSTANTIATE_TEST_SUITE_P(TinyPresets, Probes, testing::ValuesIn(probe_cases()), [](const auto& info) {
  std::string n = fmt::format("{}_{}", info.param.preset, info.param.probe);
  for (char& c : n)
    if (c == '-' || c == '.') c = '_';
  return n;
});

// A bug that only a probe's inputs expose: invisible on the seeded prompt, caught at its stage
// with the probe.
struct ProbeMutantCase {
  const char* name;
  const char* preset;
  const char* probe;
  const char* mutant;
  const char* stage;
};

class ProbeMutant : public testing::TestWithParam<ProbeMutantCase> {};

TEST_P(ProbeMutant, PassesWithoutItsProbeAndFailsAtItsStageWithIt) {
  RunOptions o;
  o.model = fmt::format("synthetic:{}", GetParam().preset);
  o.candidate = GetParam().mutant;
  o.modes = {Mode::isolated, Mode::chained};
  o.isolate_process = false;
  const RunReport plain = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(plain.exit_code, kExitParity) << plain.verdict;
  o.probe = GetParam().probe;
  const RunReport probed = run_parity(o, Policy::dtype_defaults());
  ASSERT_EQ(probed.exit_code, kExitFailure) << probed.verdict;
  ASSERT_TRUE(probed.first_failure);
  EXPECT_EQ(probed.first_failure->key.stage, GetParam().stage);
  EXPECT_EQ(probed.first_failure->key.step, 0);
  EXPECT_EQ(probed.first_failure->mode, Mode::isolated);
}

INSTANTIATE_TEST_SUITE_P(Probes, ProbeMutant,
                         testing::Values(ProbeMutantCase{"l2norm_without_epsilon", "qwen35-tiny",
                                                         "tiny-gdn-qk", "mutant:l2norm-no-eps", "q_l2"}),
                         [](const auto& i) { return std::string(i.param.name); });

TEST(ProbeOptions, UnknownProbeAndGivenTokensAreBadInput) {
  EXPECT_THROW(find_probe("no-such-probe"), InputError);
  RunOptions o;
  o.model = "synthetic:llama-tiny";
  o.candidate = "simt";
  o.tokens = {1, 2, 3};
  o.prompt_tokens = 3;
  o.probe = "boundary-ids";
  o.isolate_process = false;
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), InputError);
}

}  // namespace
}  // namespace ds
