// Qwen3-Next on simt end to end: synthetic:qwen35-tiny against the reference over a
// multi-step decode with every --gdn-variant; the capability gate refusing simt-gdn-plain (simt
// declaring only the plain GDN ops) when a fused variant is requested (naming it); and the
// mutant:gdn-<name> table (gpu::gdn_mutants()).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "gpu/mutants.h"
#include "registry.h"
#include "runner.h"

namespace ds {
namespace gpu {
// Test lists show a mutant by its name, not by its bytes.
static void PrintTo(const GdnMutantInfo& m, std::ostream* os) { *os << m.name; }
}  // namespace gpu
namespace {

RunOptions options(std::string candidate, std::string variant, int decode_steps = 8) {
  RunOptions o;
  o.model = "synthetic:qwen35-tiny";
  o.candidate = std::move(candidate);
  o.prompt_tokens = 4;
  o.decode_steps = decode_steps;
  o.gdn_variant = std::move(variant);
  o.isolate_process = false;
  return o;
}

class Variant : public testing::TestWithParam<const char*> {};

TEST_P(Variant, SimtPassesEveryStageAndTheState) {
  const RunReport r = run_parity(options("simt", GetParam()), Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  int gdn_state = 0, conv_state = 0;
  for (const auto& s : r.results) {
    gdn_state += s.key.stage == "gdn_state";
    conv_state += s.key.stage == "conv_state";
  }
  EXPECT_EQ(gdn_state, 2 * 9) << "2 GDN layers x (prefill + 8 decode steps)";
  EXPECT_EQ(conv_state, 2 * 9);
}

INSTANTIATE_TEST_SUITE_P(Gdn, Variant,
                         testing::Values("plain", "inplace", "ids", "conv-update", "conv-update-ids",
                                         "inplace,conv-update", "ids,conv-update-ids"),
                         [](const auto& info) {
                           std::string n(info.param);
                           for (char& c : n)
                             if (c == '-' || c == ',') c = '_';
                           return n;
                         });

// In a child process (the CLI default) and in both modes: the empty "prev:<state>" inputs of
// the prefill cross the process boundary as empty tensors, and the chained lane carries the
// candidate's own conv / GDN states from step to step.
TEST(Isolation, ChildProcessAndChainedModeRunTheFusedPath) {
  RunOptions o = options("simt", "ids,conv-update-ids", 3);
  o.isolate_process = true;
  o.modes = {Mode::isolated, Mode::chained};
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
}

TEST(Gate, PlainOnlyCandidateIsRefusedNamingTheFusedVariant) {
  for (const auto& [variant, op] :
       {std::pair{"inplace", "GdnInplace"}, std::pair{"ids", "GdnInplaceIds"},
        std::pair{"conv-update", "SsmConvUpdate"}, std::pair{"conv-update-ids", "SsmConvUpdateIds"}}) {
    try {
      run_parity(options("simt-gdn-plain", variant, 1), Policy::dtype_defaults());
      ADD_FAILURE() << "simt-gdn-plain ran a plan requesting " << variant;
    } catch (const GateRefusal& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(fmt::format("Missing:          [{}]", op)), std::string::npos) << what;
    }
  }
  // The plain plan runs on it.
  EXPECT_EQ(run_parity(options("simt-gdn-plain", "", 2), Policy::dtype_defaults()).exit_code, kExitParity);
}

TEST(Gate, UnknownVariantIsAUsageError) {
  EXPECT_THROW(gdn_variant_ops("inplace,fast"), InputError);
  EXPECT_TRUE(gdn_variant_ops("").empty());
  EXPECT_TRUE(gdn_variant_ops("plain").empty());
  EXPECT_EQ(gdn_variant_ops("ids,conv-update").size(), 2u);
}

class GdnMutant : public testing::TestWithParam<gpu::GdnMutantInfo> {};

TEST_P(GdnMutant, IsCaughtFirstAtItsDocumentedStageAndStep) {
  const auto& m = GetParam();
  const RunReport r = run_parity(options(fmt::format("mutant:{}", m.name), std::string(m.gdn_variant), 3),
                                 Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitFailure) << r.verdict;
  ASSERT_TRUE(r.first_failure.has_value()) << r.verdict;
  EXPECT_EQ(r.first_failure->key.stage, m.first_stage) << r.verdict;
  EXPECT_EQ(r.first_failure->key.layer, m.first_layer) << r.verdict;
  EXPECT_EQ(r.first_failure->key.step, m.first_step) << r.verdict;
}

INSTANTIATE_TEST_SUITE_P(Table, GdnMutant,
                         testing::ValuesIn(gpu::gdn_mutants().begin(), gpu::gdn_mutants().end()),
                         [](const auto& info) {
                           std::string n(info.param.name);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace ds
