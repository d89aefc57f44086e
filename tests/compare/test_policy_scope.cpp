// What the policy says about itself: a rule whose stage no model family has is an error naming
// it (with the closest stage name), and a failing note prints the numbers it divides.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "closest_name.h"
#include "load_model.h"
#include "policy.h"
#include "policy_scope.h"
#include "stage_catalog.h"

namespace ds {
namespace {

struct ClosestCase {
  const char* name;
  const char* typed;
  const char* expect;  // "" : no suggestion
};
void PrintTo(const ClosestCase& c, std::ostream* os) { *os << c.name; }
class ClosestName : public testing::TestWithParam<ClosestCase> {};

TEST_P(ClosestName, SuggestsOnlyANearName) {
  const std::vector<std::string> known{"cpu-f16",   "cpu-f16-v1", "simt",    "cuda",
                                       "attn_norm", "attn",       "ffn_norm"};
  const auto got = closest_name(GetParam().typed, known);
  EXPECT_EQ(got.value_or(""), GetParam().expect);
  EXPECT_EQ(did_you_mean(GetParam().typed, known),
            *GetParam().expect ? fmt::format("; did you mean '{}'?", GetParam().expect) : std::string());
}

INSTANTIATE_TEST_SUITE_P(Names, ClosestName,
                         testing::Values(ClosestCase{"one_letter_off", "simd", "simt"},
                                         ClosestCase{"letter_dropped", "atn_norm", "attn_norm"},
                                         ClosestCase{"neighbours_swapped", "atnt", "attn"},
                                         ClosestCase{"known_name_needs_none", "simt", ""},
                                         ClosestCase{"far_from_everything", "llama", ""}),
                         [](const auto& i) { return std::string(i.param.name); });

// qwen2-tiny's header: 2 layers, no QK-norm.
ModelConfig two_layer_qwen2() {
  ModelConfig c = ref::load_config("synthetic:qwen2-tiny", 0);
  c.name = "qwen2-test";
  return c;
}

struct ScopeCase {
  const char* name;
  const char* rule;    // one YAML rule, after "  - "
  const char* expect;  // in the error; "" : every rule applies
};
void PrintTo(const ScopeCase& c, std::ostream* os) { *os << c.name; }
class PolicyScope : public testing::TestWithParam<ScopeCase> {};

TEST_P(PolicyScope, ARuleSelectingNoStageIsNamed) {
  const Policy p = Policy::from_yaml(
      fmt::format("rules:\n  - {}\n  - stage: \".*\"\n    dtype_defaults: true\n", GetParam().rule),
      "p.yaml");
  const auto sites = model_stage_sites(two_layer_qwen2());
  const auto why = unapplied_rule(p, sites, "qwen2-test");
  if (!*GetParam().expect) {
    EXPECT_FALSE(why) << *why;
    return;
  }
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("policy p.yaml:2"), std::string::npos) << *why;  // the rule's file and line
  EXPECT_NE(why->find(GetParam().expect), std::string::npos) << *why;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, PolicyScope,
    testing::Values(
        ScopeCase{"catalog_stage", "stage: attn_norm\n    bit_exact: true", ""},
        ScopeCase{"regex_over_stages", "stage: \"q|k\"\n    bit_exact: true", ""},
        ScopeCase{"model_level_stage", "stage: logits\n    bit_exact: true", ""},
        ScopeCase{"layer_in_range", "stage: q\n    layers: 1\n    bit_exact: true", ""},
        ScopeCase{
            "typo_gets_a_suggestion", "stage: atn_norm\n    bit_exact: true",
            "rule stage 'atn_norm' matches no stage of qwen2-test nor of any other model family; did you "
            "mean 'attn_norm'?"},
        // One policy serves a matrix of families and depths: a rule for another family's stage, or
        // for layers this model does not have, is kept for the models that do.
        ScopeCase{"stage_another_family_has", "stage: q_norm\n    bit_exact: true", ""},
        ScopeCase{"layers_past_the_last", "stage: q\n    layers: \"5:9\"\n    bit_exact: true", ""},
        ScopeCase{"gdn_stage_regex", "stage: \"gdn_.*\"\n    bit_exact: true", ""},
        ScopeCase{"expect_rule_too", "stage: atn\n    expect: missing", "did you mean 'attn'?"}),
    [](const auto& i) { return std::string(i.param.name); });

// ---- notes print the numbers they divide ----

struct NoteCase {
  const char* name;
  const char* policy;  // "" : the built-in one
  Mode mode;
  double floor_rms, ref_rms;  // a floor below half an f16 ULP of ref_rms is raised
  bool raised;
};
void PrintTo(const NoteCase& c, std::ostream* os) { *os << c.name; }
class RmsNote : public testing::TestWithParam<NoteCase> {};

TEST_P(RmsNote, TheRatioIsTheTwoNumbersPrinted) {
  const NoteCase& c = GetParam();
  StageResult r;
  r.key = {0, 0, "residual_1"};
  r.mode = c.mode;
  r.cand_dtype = DType::f16;
  r.m.numel = 256;
  r.m.ref_rms = c.ref_rms;
  r.floor_rms = c.floor_rms;
  r.floor_max_abs = 4 * c.floor_rms;
  const double used = floor_of(c.floor_rms, DType::f16, c.ref_rms);
  r.m.rms = 23 * used;  // fails any rms limit, every element inside the band
  r.m.max_abs = 0;
  const Policy p = *c.policy ? Policy::from_yaml(c.policy) : Policy::dtype_defaults();
  p.judge(r);
  ASSERT_EQ(r.status, Status::fail) << r.note;
  std::smatch m;
  const std::regex pattern(
      R"(rms ([0-9.e+-]+) is ([0-9.e+-]+)x the (?:f16 noise )?floor's rms ([0-9.e+-]+))");
  ASSERT_TRUE(std::regex_search(r.note, m, pattern)) << r.note;
  const double rms = std::stod(m[1]), ratio = std::stod(m[2]), floor = std::stod(m[3]);
  EXPECT_NEAR(ratio, rms / floor, 0.01 * ratio) << r.note;
  EXPECT_NEAR(floor, used, 0.01 * used) << r.note;
  EXPECT_EQ(r.note.find("raised") != std::string::npos, c.raised) << r.note;
}

INSTANTIATE_TEST_SUITE_P(
    Notes, RmsNote,
    testing::Values(NoteCase{"statistical_limit_floor_as_recorded", "", Mode::isolated, 1e-2, 1.0, false},
                    // 0x1p-11 x 1.0 = 4.9e-4 > 1e-5: the limit divides by the raised floor and says so.
                    NoteCase{"statistical_limit_raised_floor", "", Mode::isolated, 1e-5, 1.0, true},
                    NoteCase{"noise_floor_rms_raised", "", Mode::chained, 1e-5, 1.0, true},
                    NoteCase{"noise_floor_rms_as_recorded", "", Mode::chained, 1e-2, 1.0, false}),
    [](const auto& i) { return std::string(i.param.name); });

TEST(ElementNote, PrintsTheFloorTheBandWasTakenFrom) {
  StageResult r;
  r.key = {0, 0, "residual_1"};
  r.mode = Mode::chained;
  r.cand_dtype = DType::f16;
  r.m.numel = 256;
  r.m.ref_rms = 1.0;
  r.floor_rms = 1e-6;
  r.floor_max_abs = 1e-6;  // raised to 4.88e-4
  r.m.mismatches = 3;
  r.m.max_abs = 0.1;
  r.m.rms = 0.01;
  Policy::dtype_defaults().judge(r);
  ASSERT_EQ(r.status, Status::fail);
  EXPECT_NE(r.note.find("max|d| 0.1 vs floor 0.000488 (the recorded 1e-06 raised"), std::string::npos)
      << r.note;
}

}  // namespace
}  // namespace ds
