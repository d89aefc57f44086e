// The local check (docs/policies.md, "The local check"): how the built-in chained rule judges a
// stage's local numbers, the run's local-check line and its hold on the drift verdict, the policy
// keys and the trace fields.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "local_check.h"
#include "metrics.h"
#include "policy.h"
#include "runner.h"
#include "trace_schema.h"

namespace ds {
namespace {

// A chained f32 stage of RMS 1 that passes the accumulated rule (error = its floor) and has a local
// check whose two honest engines differ by 1e-6 (max) and 2e-7 (rms).
StageResult checked(double local_max, double local_rms, double slope = 0, double se = 1e-7) {
  StageResult r;
  r.key = {0, 1, "down"};
  r.mode = Mode::chained;
  r.cand_dtype = DType::f32;
  r.m.numel = 1024;
  r.m.ref_rms = 1;
  r.m.max_abs = 1e-3;
  r.m.rms = 2e-4;
  r.floor_max_abs = 1e-3;
  r.floor_rms = 2e-4;
  r.local.max_abs = local_max;
  r.local.rms = local_rms;
  r.local.noise_max_abs = 1e-6;
  r.local.noise_rms = 2e-7;
  r.local.scale = 3;
  r.local.bias_slope = slope;
  r.local.bias_se = se;
  r.local.carried_max_abs = 5e-4;
  r.local.carried_rms = 1e-4;
  return r;
}

struct LocalCase {
  const char* name;
  StageResult r;
  bool passes;
  const char* note;  // a part of the note when it fails
};

class LocalRule : public ::testing::TestWithParam<LocalCase> {};

TEST_P(LocalRule, JudgesTheCandidatesOwnStep) {
  LocalCase c = GetParam();
  Policy::dtype_defaults().judge(c.r);
  EXPECT_EQ(c.r.status, c.passes ? Status::pass : Status::fail) << c.r.note;
  EXPECT_EQ(c.r.local_worse, !c.passes);
  if (!c.passes) {
    EXPECT_NE(c.r.note.find(c.note), std::string::npos) << c.r.note;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Judges, LocalRule,
    ::testing::Values(
        LocalCase{"as_good_as_an_honest_engine", checked(2e-6, 4e-7), true, ""},
        LocalCase{"max_9x_the_spread", checked(9e-6, 4e-7), false, "is 9x what two honest engines"},
        LocalCase{"rms_9x_the_spread", checked(2e-6, 1.8e-6), false, "the rms of cand - honest step"},
        LocalCase{"scale_7_sigma", checked(2e-6, 4e-7, 7e-7), false, "7.0 standard errors from none"},
        LocalCase{"scale_5_sigma", checked(2e-6, 4e-7, 5e-7), true, ""},
        LocalCase{"no_spread_raised_to_half_an_ulp_of_the_largest_value",
                  [] {
                    StageResult r = checked(1e-6, 1e-8);  // 5.6 half-ULPs of 3
                    r.local.noise_max_abs = r.local.noise_rms = 0;
                    return r;
                  }(),
                  true, ""}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(LocalRule, TheAccumulatedFloorIsAtLeastTheErrorCarriedIn) {
  // A norm over a near-zero row amplifies the error it is fed: 10x the chained floor, but no more
  // than an honest step computes from the same inputs.
  StageResult r = checked(2e-6, 4e-7);
  r.m.max_abs = 1e-2;
  r.m.rms = 2e-3;
  r.local.carried_max_abs = 1.1e-2;
  r.local.carried_rms = 2.1e-3;
  const Policy p = Policy::dtype_defaults();
  EXPECT_DOUBLE_EQ(p.tolerance(r).atol, 8 * 1.1e-2);
  r.m.mismatches = 0;
  p.judge(r);
  EXPECT_EQ(r.status, Status::pass) << r.note;
  // Without a local check the same error is 10x its floor.
  r.local = LocalCheck{};
  r.m.mismatches = 1;
  p.judge(r);
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_FALSE(r.local_worse);
}

TEST(LocalRule, APolicyFileSpellsItAndRefusesItElsewhere) {
  const Policy p =
      Policy::from_yaml("rules:\n  - mode: chained\n    noise_floor: 8\n    local: 4\n    local_bias_z: 3\n");
  StageResult r = checked(5e-6, 4e-7);  // 5x: within the built-in 8, over this 4
  p.judge(r);
  EXPECT_EQ(r.status, Status::fail) << r.note;
  r = checked(2e-6, 4e-7, 4e-7);  // 4 sigma: over this 3
  p.judge(r);
  EXPECT_NE(r.note.find("4.0 standard errors"), std::string::npos) << r.note;
  // A noise_floor rule without `local` does not hold stages to it.
  r = checked(9e-6, 4e-7);
  Policy::from_yaml("rules:\n  - mode: chained\n    noise_floor: 8\n").judge(r);
  EXPECT_EQ(r.status, Status::pass) << r.note;
  for (const char* bad : {"rules:\n  - dtype_defaults: true\n    local: 8\n",
                          "rules:\n  - mode: chained\n    noise_floor: 8\n    local: 0\n",
                          "rules:\n  - mode: chained\n    noise_floor: 8\n    local_bias_z: -1\n"})
    EXPECT_THROW(Policy::from_yaml(bad, "p.yaml"), PolicyError) << bad;
}

// A run of one chained layer output per layer: error growing 1.5x a layer against a flat floor, 0.5x
// to 3.8x it (a
// steady drift inside the band), with or without a local check that passes every step.
RunReport drifting(bool local) {
  RunReport report;
  for (int layer = 0; layer < 6; ++layer) {
    StageResult r = checked(2e-6, 4e-7);
    r.key = {0, layer, "residual_2"};
    r.floor_max_abs = 1e-2;
    r.floor_rms = 2e-3;
    r.m.max_abs = 1e-3;
    r.m.rms = 2e-3 * 0.5 * std::pow(1.5, layer);
    if (!local) r.local = LocalCheck{};
    Policy::dtype_defaults().judge(r);
    report.results.push_back(r);
  }
  conclude(report);
  summarize_local_check(report);
  locate_drift(report);
  return report;
}

TEST(LocalVerdict, ARunEveryStepOfWhichIsHonestDoesNotFailOnItsDrift) {
  const RunReport without = drifting(false);
  ASSERT_TRUE(without.drift_failed) << without.drift;
  EXPECT_TRUE(without.local_check.empty());
  const RunReport with = drifting(true);
  EXPECT_FALSE(with.drift_failed) << with.drift;
  EXPECT_EQ(with.exit_code, kExitParity);
  EXPECT_NE(with.drift.find("the numerics' own growth"), std::string::npos) << with.drift;
  EXPECT_NE(with.local_check.find("as good as an honest engine of its numerics"), std::string::npos);
}

TEST(LocalVerdict, NamesTheFirstStageItsOwnStepMadeWorseEvenWhereTheFloorFailedFirst) {
  RunReport report;
  StageResult worse = checked(3e-5, 4e-7);
  worse.m.mismatches = 4;  // also over the accumulated floor: the note gives that
  Policy::dtype_defaults().judge(worse);
  report.results.push_back(worse);
  conclude(report);
  summarize_local_check(report);
  EXPECT_NE(report.local_check.find("worse than its precision explains: first at down of layer 1 at step 0, "
                                    "where its own step is 30x"),
            std::string::npos)
      << report.local_check;
}

// A stage of `rows` x `cols` f32 values of scale 1 as two honest engines give it (the second off by
// noise of 1e-6 per element), and a candidate off by noise of the same size with columns
// [scaled_from, scaled_from + scaled_cols) of every row scaled by 1 + eps; measured and judged by the
// built-in chained rule. head_width: the stage's head width (0: no heads).
struct GroupCase {
  const char* name;
  std::int64_t rows, cols;
  int head_width;
  std::int64_t scaled_from, scaled_cols;
  double eps;
  const char* note;  // nullptr: passes; else a part of the failure's note
};

void PrintTo(const GroupCase& c, std::ostream* os) { *os << c.name; }

StageResult judged_group_case(const GroupCase& c) {
  std::mt19937 rng(7);
  std::normal_distribution<double> unit(0, 1);
  const Shape shape{c.rows, c.cols};
  Tensor h(DType::f64, shape), alt(DType::f64, shape), cand(DType::f64, shape);
  for (std::int64_t i = 0; i < h.numel(); ++i) {
    const double v = unit(rng), col = double(i % c.cols);
    const bool scaled = col >= double(c.scaled_from) && col < double(c.scaled_from + c.scaled_cols);
    h.set(i, v);
    alt.set(i, v + 1e-6 * unit(rng));
    cand.set(i, v * (scaled ? 1 + c.eps : 1) + 1e-6 * unit(rng));
  }
  StageResult r;
  r.key = {0, 1, "attn"};
  r.mode = Mode::chained;
  r.cand_dtype = DType::f32;
  r.shape = shape;
  const Metrics m = compute_metrics(h.view(), cand.view(), DType::f32, {});
  r.m.ref_rms = 1;
  r.floor_max_abs = m.max_abs;  // the accumulated rule passes: the local check decides
  r.floor_rms = m.rms;
  r.local = measure_local(h, cand, h, alt, DType::f32, Numerics{}, "attn", c.head_width);
  const Policy policy = Policy::dtype_defaults();
  r.m = compute_metrics(h.view(), cand.view(), DType::f32, policy.tolerance(r));
  policy.judge(r);
  return r;
}

class LocalGroup : public ::testing::TestWithParam<GroupCase> {};

TEST_P(LocalGroup, FindsABiasConfinedToOneHeadOrChannel) {
  const GroupCase& c = GetParam();
  const StageResult r = judged_group_case(c);
  if (!c.note) {
    EXPECT_EQ(r.status, Status::pass) << r.note;
    return;
  }
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_TRUE(r.local_worse);
  EXPECT_NE(r.note.find(c.note), std::string::npos) << r.note;
  // The whole stage's slope alone would not have seen it: the group test is what fired.
  EXPECT_LT(std::fabs(*local_bias_z_of(r)), kDefaultBiasZ) << r.note;
}

INSTANTIATE_TEST_SUITE_P(
    Groups, LocalGroup,
    ::testing::Values(GroupCase{"eight_clean_heads", 1, 512, 64, 0, 0, 0, nullptr},
                      GroupCase{"head_3_of_8_scaled_up", 1, 512, 64, 192, 64, 3e-6,
                                "head 3 of 8 (columns 192..255 of every row) is scaled by 1 + "},
                      GroupCase{"head_3_of_8_scaled_down", 1, 512, 64, 192, 64, -3e-6,
                                "head 3 of 8 (columns 192..255 of every row) is scaled by 1 - "},
                      GroupCase{"sixteen_clean_channels_over_64_rows", 64, 16, 0, 0, 0, 0, nullptr},
                      GroupCase{"channel_5_of_16_scaled_up", 64, 16, 0, 5, 1, 2e-6,
                                "channel 5 of 16 is scaled by 1 + "},
                      // One token: a channel is one element, which the max test judges, not a fit.
                      GroupCase{"channel_of_one_row_is_not_fitted", 1, 512, 0, 5, 1, 2e-6, nullptr}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(LocalGroup, TheLimitRisesWithTheNumberOfGroupsAsABonferroniBoundDoes) {
  EXPECT_DOUBLE_EQ(local_group_limit(6, 1), 6);
  EXPECT_NEAR(local_group_limit(6, 14), std::sqrt(36 + 2 * std::log(14.0)), 1e-12);
  EXPECT_GT(local_group_limit(6, 4096), local_group_limit(6, 14));
  // A one-row stage with no heads has no grouping: nothing recorded, nothing judged.
  const StageResult r = judged_group_case({"", 1, 512, 0, 0, 0, 0, nullptr});
  EXPECT_EQ(r.local.groups, 0);
  EXPECT_FALSE(local_group_z_of(r).has_value());
}

TEST(LocalTrace, FieldsRoundTripAndOldTracesReadAsNotRun) {
  const StageResult r = checked(2e-6, 4e-7, 1e-8);
  const StageResult back = trace::from_row(trace::to_row(r));
  EXPECT_EQ(back.local.max_abs, r.local.max_abs);
  EXPECT_EQ(back.local.noise_rms, r.local.noise_rms);
  EXPECT_EQ(back.local.bias_slope, r.local.bias_slope);
  EXPECT_EQ(back.local.carried_max_abs, r.local.carried_max_abs);
  StageResult grouped = r;
  grouped.local.group_slope = 2e-6;
  grouped.local.group_se = 1e-7;
  grouped.local.group = 3;
  grouped.local.groups = 8;
  grouped.local.group_width = 64;
  const StageResult g = trace::from_row(trace::to_row(grouped));
  EXPECT_EQ(g.local.group, 3);
  EXPECT_EQ(g.local.groups, 8);
  EXPECT_EQ(g.local.group_width, 64);
  EXPECT_EQ(g.local.group_slope, 2e-6);
  EXPECT_EQ(g.local.group_se, 1e-7);
  EXPECT_FALSE(local_group_z_of(back).has_value());
  trace::SummaryRow old = trace::to_row(r);
  old.local_max_abs = old.local_rms = old.local_noise_max_abs = old.local_noise_rms = old.local_scale = 0;
  old.local_bias_slope = old.local_bias_se = old.carried_max_abs = old.carried_rms = 0;
  EXPECT_FALSE(trace::from_row(old).local.ran());
}

}  // namespace
}  // namespace ds
