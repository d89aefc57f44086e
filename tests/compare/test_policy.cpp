// Policy parsing (good and bad YAML naming line and field) and judging.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>

#include "policy.h"

namespace ds {
namespace {

StageResult measured(std::string stage, int layer, Mode mode, double max_abs, double cosine = 1) {
  StageResult r;
  r.key = {0, layer, std::move(stage)};
  r.mode = mode;
  r.cand_dtype = DType::f16;
  r.m.numel = 16;
  r.m.max_abs = max_abs;
  r.m.rms = max_abs / 2;
  r.m.cosine = cosine;
  r.m.ref_rms = 1;
  return r;
}

std::string error_of(const std::string& yaml) {
  try {
    Policy::from_yaml(yaml, "p.yaml");
  } catch (const PolicyError& e) {
    return e.what();
  }
  return "";
}

TEST(Predicates, ParseAndHold) {
  const auto ps = parse_predicates("max_abs <= 1e-3 and cosine >= 0.9999");
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].str(), "max_abs <= 0.001");
  StageResult r = measured("q", 0, Mode::isolated, 5e-4, 0.99995);
  EXPECT_TRUE(ps[0].holds(r) && ps[1].holds(r));
  r.m.cosine = 0.9;
  EXPECT_FALSE(ps[1].holds(r));
  r.m.max_abs = std::nan("");
  EXPECT_FALSE(ps[0].holds(r));  // a NaN metric never passes
  EXPECT_FALSE(parse_predicates("max_abs > 1")[0].holds(r));
}

TEST(Predicates, BadInputNamesThePart) {
  auto msg = [](const char* s) {
    try {
      parse_predicates(s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg("maxabs <= 1").find("unknown metric 'maxabs'"), std::string::npos);
  EXPECT_NE(msg("max_abs =< 1").find("unknown operator '=<'"), std::string::npos);
  EXPECT_NE(msg("max_abs <= one").find("'one' is not a number"), std::string::npos);
  EXPECT_NE(msg("max_abs <= 1 or rms <= 1").find("expected 'and'"), std::string::npos);
  EXPECT_NE(msg("max_abs <=").find("expected `metric op number`"), std::string::npos);
}

TEST(PolicyYaml, RulesMatchByStageLayersAndMode) {
  const Policy p = Policy::from_yaml(R"(name: t
rules:
  - stage: "q|k"
    layers: "1:2"
    mode: isolated
    check: "max_abs <= 1e-3"
  - stage: "q_norm"
    expect: missing
  - mode: chained
    noise_floor: 4
  - default: true
    dtype_defaults: true
)");
  EXPECT_EQ(p.name(), "t");
  ASSERT_EQ(p.rules().size(), 4u);
  EXPECT_EQ(p.rule_for({0, 1, "q"}, Mode::isolated, true), &p.rules()[0]);
  EXPECT_EQ(p.rule_for({0, 3, "q"}, Mode::isolated, true), &p.rules()[3]);   // layer out of range
  EXPECT_EQ(p.rule_for({0, -1, "q"}, Mode::isolated, true), &p.rules()[3]);  // model level
  EXPECT_EQ(p.rule_for({0, 1, "qq"}, Mode::isolated, true), &p.rules()[3]);  // regex is a full match
  EXPECT_EQ(p.rule_for({0, 1, "q"}, Mode::chained, true), &p.rules()[2]);
  EXPECT_EQ(p.rule_for({0, 0, "q_norm"}, Mode::isolated, false), &p.rules()[1]);
  EXPECT_EQ(p.rule_for({0, 0, "q_norm"}, Mode::isolated, true), &p.rules()[3]);  // expect: only when absent

  StageResult r = measured("q", 1, Mode::isolated, 2e-3);
  p.judge(r);
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.note.find("max_abs <= 0.001 fails"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("<policy>:"), std::string::npos) << r.note;  // names the rule
}

TEST(PolicyYaml, StageMatchingNoRuleFailsUnlessDefault) {
  const Policy p = Policy::from_yaml("rules:\n  - stage: q\n    check: \"max_abs <= 1\"\n", "p.yaml");
  StageResult r = measured("k", 0, Mode::isolated, 0);
  p.judge(r);
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.note.find("no policy rule matches"), std::string::npos);
}

TEST(PolicyYaml, ExpectedMissingAndSkipped) {
  const Policy p = Policy::from_yaml(R"(rules:
  - stage: "q_norm"
    expect: missing
  - stage: "k_norm"
    expect: skipped
  - stage: ".*"
    default: true
    dtype_defaults: true
)");
  for (auto [stage, status, failure] :
       {std::tuple{"q_norm", Status::missing, false}, std::tuple{"k_norm", Status::skipped, false},
        std::tuple{"q_norm", Status::skipped, true}, std::tuple{"attn", Status::missing, true},
        std::tuple{"attn", Status::skipped, true}}) {
    StageResult r;
    r.key = {0, 0, stage};
    r.status = status;
    p.judge(r);
    EXPECT_EQ(r.status, status);
    EXPECT_EQ(is_failure(r), failure) << stage << " " << status_name(status);
  }
}

TEST(PolicyYaml, BadFilesNameLineAndField) {
  EXPECT_NE(error_of("rules:\n  - stage: q\n    chek: \"max_abs <= 1\"\n")
                .find("p.yaml:3: field 'chek': unknown field"),
            std::string::npos);
  EXPECT_NE(error_of("rules:\n  - stage: q\n    check: \"max_abs <= x\"\n").find("p.yaml:3: field 'check'"),
            std::string::npos);
  EXPECT_NE(error_of("rules:\n  - stage: \"(\"\n    check: \"max_abs <= 1\"\n")
                .find("p.yaml:2: field 'stage': bad regex"),
            std::string::npos);
  // A repeat count libstdc++ would overflow (found by the policy fuzz target) is refused by name.
  EXPECT_NE(error_of("rules:\n  - stage: \"a{6666666666666666666666}\"\n    check: \"max_abs <= 1\"\n")
                .find("p.yaml:2: field 'stage': bad regex: a repeat count"),
            std::string::npos);
  EXPECT_NE(error_of("rules:\n  - stage: \"q{2,1001}\"\n    check: \"max_abs <= 1\"\n")
                .find("larger than the 1000"),
            std::string::npos);
  EXPECT_EQ(error_of("rules:\n  - stage: \"q{2,1000}_x\"\n    check: \"max_abs <= 1\"\n"), "");
  EXPECT_NE(error_of("rules:\n  - stage: \"(q)\\\\5555555555555\"\n    check: \"max_abs <= 1\"\n")
                .find("backreference"),
            std::string::npos);
  // An escaped backslash before digits is a literal, not a backreference.
  EXPECT_EQ(error_of("rules:\n  - stage: \"q\\\\\\\\5555\"\n    check: \"max_abs <= 1\"\n"), "");
  EXPECT_NE(
      error_of("rules:\n  - layers: \"5:2\"\n    dtype_defaults: true\n").find("p.yaml:2: field 'layers'"),
      std::string::npos);
  EXPECT_NE(error_of("rules:\n  - mode: sideways\n    dtype_defaults: true\n").find("field 'mode'"),
            std::string::npos);
  EXPECT_NE(
      error_of("rules:\n  - stage: q\n    expect: pass\n").find("field 'expect': must be missing or skipped"),
      std::string::npos);
  EXPECT_NE(error_of("rules:\n  - stage: q\n").find("p.yaml:2: a rule needs exactly one of"),
            std::string::npos);
  EXPECT_NE(error_of("rules: [\n").find("p.yaml:"), std::string::npos);
  EXPECT_NE(error_of("rulez: []\n").find("field 'rulez'"), std::string::npos);
  EXPECT_NE(error_of("rules: []\n").find("no rules"), std::string::npos);
}

// Found by fuzzing (tests/fuzz/regressions/policy/): YAML allows any node as a key, and a key
// that was not a string escaped as a yaml-cpp exception and aborted the CLI.
TEST(PolicyYaml, KeysThatAreNotWordsAreNamed) {
  EXPECT_NE(error_of("? ?\n").find("p.yaml:1: a field name must be a word, not a mapping"),
            std::string::npos);
  EXPECT_NE(error_of("? [a, b]\n: 1\n").find("a field name must be a word, not a list"), std::string::npos);
  EXPECT_NE(error_of("rules:\n  - ? {a: 1}\n    : 1\n")
                .find("p.yaml:2: a field name must be a word, not a mapping"),
            std::string::npos);
}

TEST(PolicyDefaults, IsolatedUsesScaledDtypeTolerance) {
  const Policy p = Policy::dtype_defaults();
  StageResult r = measured("q", 0, Mode::isolated, 0);
  r.m.ref_rms = 4;
  const Tolerance t = p.tolerance(r);
  EXPECT_DOUBLE_EQ(t.rtol, 1e-3);
  EXPECT_DOUBLE_EQ(t.atol, 4e-3);  // rtol x the stage's RMS, not 1e-5
  r.m.mismatches = 0;
  p.judge(r);
  EXPECT_EQ(r.status, Status::pass);
  r.m.mismatches = 3;
  p.judge(r);
  EXPECT_EQ(r.status, Status::fail);
}

TEST(PolicyDefaults, ChainedUsesTheNoiseFloor) {
  const Policy p = Policy::dtype_defaults();
  StageResult r = measured("attn_out", 0, Mode::chained, 3e-3);
  r.floor_max_abs = 1e-3;
  r.floor_rms = 5e-4;
  EXPECT_DOUBLE_EQ(p.tolerance(r).atol, 8e-3);
  p.judge(r);
  EXPECT_EQ(r.status, Status::pass) << r.note;
  r.m.rms = 5e-3;  // 10x the floor RMS, every element inside the band: the note names the rms limit
  p.judge(r);
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.note.find("rms 0.005 is 10x the floor's rms 0.0005 (limit 8x), though every element is within"),
            std::string::npos)
      << r.note;
  r.m.mismatches = 2;
  p.judge(r);
  EXPECT_NE(r.note.find("2 element(s) above 8 x noise floor"), std::string::npos) << r.note;
  StageResult no_floor = measured("attn_out", 0, Mode::chained, 0);
  p.judge(no_floor);
  EXPECT_EQ(no_floor.status, Status::fail);
  // A zero floor is raised to half an ULP of the stage's scale, not demanded as bit-exact.
  StageResult zero = measured("embed", -1, Mode::chained, 1e-4);
  zero.floor_max_abs = zero.floor_rms = 0;
  EXPECT_GT(p.tolerance(zero).atol, 1e-4);
}

TEST(PolicyYaml, BitExact) {
  const Policy p = Policy::from_yaml("rules:\n  - bit_exact: true\n");
  StageResult r = measured("q", 0, Mode::isolated, 0);
  EXPECT_EQ(p.tolerance(r), (Tolerance{0, 0}));
  p.judge(r);
  EXPECT_EQ(r.status, Status::pass);
  r.m.max_ulp = 1;
  p.judge(r);
  EXPECT_EQ(r.status, Status::fail);
}

TEST(PolicyJudge, NaNStatusAndUnmatchedInfinityFail) {
  const Policy p = Policy::dtype_defaults();
  StageResult r = measured("q", 0, Mode::isolated, std::nan(""));
  r.m.nan_cand = 1;
  r.m.mismatches = 1;
  p.judge(r);
  EXPECT_EQ(r.status, Status::nan);
  StageResult inf = measured("q", 0, Mode::isolated, INFINITY);
  inf.m.inf_agree = false;
  p.judge(inf);
  EXPECT_EQ(inf.status, Status::fail);
  EXPECT_NE(inf.note.find("+-Inf"), std::string::npos) << inf.note;
}

// The built-in isolated rule widens atol to 8 x the stage's floor; the file says so with
// floor_relief (cli.default_policy_file compares whole traces under both).
TEST(PolicyYaml, FloorReliefWidensTheDtypeRule) {
  StageResult r = measured("logits", -1, Mode::isolated, 0);
  r.floor_max_abs = 0.5;
  const Policy relieved = Policy::from_yaml("rules:\n  - dtype_defaults: true\n    floor_relief: 8\n");
  EXPECT_DOUBLE_EQ(relieved.tolerance(r).atol, 4.0);
  EXPECT_DOUBLE_EQ(relieved.tolerance(r).atol, Policy::dtype_defaults().tolerance(r).atol);
  EXPECT_DOUBLE_EQ(Policy::from_yaml("rules:\n  - dtype_defaults: true\n").tolerance(r).atol, 1e-3);
  EXPECT_NE(error_of("rules:\n  - noise_floor: 8\n    floor_relief: 8\n")
                .find("floor_relief widens a dtype_defaults rule"),
            std::string::npos);
  EXPECT_NE(error_of("rules:\n  - dtype_defaults: true\n    floor_relief: -1\n").find("field 'floor_relief'"),
            std::string::npos);
}

// The built-in isolated rule's statistical limit: the error RMS at most 2 x the floor's, on 16-bit
// stages large enough for an RMS to mean something. Each case: the stage, and the verdict.
struct FloorRmsCase {
  const char* name;
  DType dtype;
  std::int64_t numel;
  double rms;  // the floor's rms is 1e-4 and every element is inside the band
  bool floor_recorded;
  Status expect;
};

class FloorRms : public testing::TestWithParam<FloorRmsCase> {};

TEST_P(FloorRms, JudgesTheErrorSpreadOverEveryElement) {
  const FloorRmsCase& c = GetParam();
  StageResult r = measured("attn_out", 0, Mode::isolated, 5e-4);
  r.cand_dtype = c.dtype;
  r.m.numel = c.numel;
  r.m.rms = c.rms;
  r.m.ref_rms = 0.01;  // half a bf16 ULP of it (3.9e-5) is below the floor: the floor is not raised
  if (c.floor_recorded) {
    r.floor_rms = 1e-4;
    r.floor_max_abs = 4e-4;
  }
  for (const Policy& p :
       {Policy::dtype_defaults(), Policy::from_file(DRIFTSCOPE_FIXTURES "/policies/default.yaml")}) {
    StageResult judged = r;
    p.judge(judged);
    EXPECT_EQ(judged.status, c.expect) << p.name() << ": " << judged.note;
    if (c.expect == Status::fail) {
      // A failure with no elementwise mismatch names the aggregate limit that tripped.
      EXPECT_NE(judged.note.find(fmt::format("2.5x the {} noise floor's rms", dtype_name(c.dtype))),
                std::string::npos)
          << judged.note;
      EXPECT_NE(judged.note.find("every element is within tolerance"), std::string::npos) << judged.note;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Policy, FloorRms,
    testing::Values(
        FloorRmsCase{"f16_near_the_floor_passes", DType::f16, 256, 1.1e-4, true, Status::pass},
        FloorRmsCase{"f16_at_2_5x_the_floor_fails", DType::f16, 256, 2.5e-4, true, Status::fail},
        FloorRmsCase{"bf16_at_2_5x_the_floor_fails", DType::bf16, 256, 2.5e-4, true, Status::fail},
        // 31 elements: too small a sample for an RMS; the elementwise band alone judges.
        FloorRmsCase{"too_few_elements_are_not_judged_by_rms", DType::f16, 31, 2.5e-4, true, Status::pass},
        // An f32 stage's floor is one f32 rounding, below any f32 accumulation error.
        FloorRmsCase{"f32_stages_are_not_judged_by_rms", DType::f32, 256, 2.5e-4, true, Status::pass},
        FloorRmsCase{"no_floor_no_rms_limit", DType::f16, 256, 2.5e-4, false, Status::pass}),
    [](const testing::TestParamInfo<FloorRmsCase>& i) { return std::string(i.param.name); });

TEST(PolicyYaml, FloorRmsGoesWithDtypeDefaultsOnly) {
  EXPECT_EQ(error_of("rules:\n  - dtype_defaults: true\n    floor_rms: 2\n"), "");
  EXPECT_NE(error_of("rules:\n  - noise_floor: 8\n    floor_rms: 2\n")
                .find("floor_rms limits a dtype_defaults rule"),
            std::string::npos);
  EXPECT_NE(error_of("rules:\n  - dtype_defaults: true\n    floor_rms: 0\n").find("field 'floor_rms'"),
            std::string::npos);
  // Without the key a file rule has no RMS limit.
  StageResult r = measured("q", 0, Mode::isolated, 5e-4);
  r.m.numel = 256;
  r.m.rms = 1e-2;
  r.floor_rms = 1e-4;
  r.floor_max_abs = 1e-3;
  Policy::from_yaml("rules:\n  - dtype_defaults: true\n    floor_relief: 8\n").judge(r);
  EXPECT_EQ(r.status, Status::pass) << r.note;
}

TEST(PolicyFiles, ShippedPoliciesParse) {
  EXPECT_NO_THROW(Policy::from_file(DRIFTSCOPE_FIXTURES "/policies/default.yaml"));
  EXPECT_NO_THROW(Policy::from_file(DRIFTSCOPE_FIXTURES "/policies/strict.yaml"));
  EXPECT_THROW(Policy::from_file("/nonexistent.yaml"), PolicyError);
}

}  // namespace
}  // namespace ds
