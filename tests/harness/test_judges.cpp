// The drift judge over every step (its layer does not move with --decode-steps, its sentence says
// "growing" only when the error grows), the systematic-error judge (compare/bias.h), and the
// verdict of a run that judged nothing.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bias.h"
#include "bisect.h"
#include "runner.h"

namespace ds {
namespace {

// ---- drift over every step ----

struct DecodeStepsCase {
  const char* name;
  int decode_steps;
};

class DriftOverSteps : public testing::TestWithParam<DecodeStepsCase> {};

// seeds 004's chain-add bug: layer 0's chained residual_2 is far out of the band at every step,
// so the drift starts there whatever the number of decode steps (it once alternated 0/1 by parity).
TEST_P(DriftOverSteps, ChainAddIdxNamesLayer0ForAnyDecodeSteps) {
  RunOptions o;
  o.model = "synthetic:qwen2-tiny";
  o.candidate = "mutant:chain-add-idx";
  o.modes = {Mode::isolated, Mode::chained};
  o.decode_steps = GetParam().decode_steps;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  ASSERT_TRUE(r.drift_start.has_value()) << r.drift;
  EXPECT_EQ(*r.drift_start, 0) << r.drift;
  EXPECT_NE(r.drift.find("Drift begins at layer 0"), std::string::npos) << r.drift;
}

INSTANTIATE_TEST_SUITE_P(Judges, DriftOverSteps,
                         testing::Values(DecodeStepsCase{"prefill_only", 0}, DecodeStepsCase{"one_decode", 1},
                                         DecodeStepsCase{"two_decodes", 2},
                                         DecodeStepsCase{"three_decodes", 3},
                                         DecodeStepsCase{"four_decodes", 4}),
                         [](const auto& i) { return std::string(i.param.name); });

StageResult layer_output(int step, int layer, double ratio) {
  StageResult r;
  r.key = {step, layer, "residual_2"};
  r.mode = Mode::chained;
  r.cand_dtype = DType::f16;
  r.m.ref_rms = 1;
  r.floor_rms = 1e-3;
  r.m.rms = ratio * 1e-3;
  return r;
}

struct SentenceCase {
  const char* name;
  std::vector<std::vector<double>> ratio;  // [step][layer]: chained error / floor
  std::optional<int> start;
  bool growing;  // the sentence says "growing"
};

class DriftSentence : public testing::TestWithParam<SentenceCase> {};

TEST_P(DriftSentence, LayerAndWordsAgreeWithTheTable) {
  RunReport report;
  for (std::size_t s = 0; s < GetParam().ratio.size(); ++s)
    for (std::size_t l = 0; l < GetParam().ratio[s].size(); ++l)
      report.results.push_back(layer_output(int(s), int(l), GetParam().ratio[s][l]));
  conclude(report);
  locate_drift(report);
  EXPECT_EQ(report.drift_start, GetParam().start) << report.drift;
  EXPECT_EQ(report.drift.find("growing") != std::string::npos, GetParam().growing) << report.drift;
}

INSTANTIATE_TEST_SUITE_P(
    Judges, DriftSentence,
    testing::Values(
        // The report of issue 31: layer 0 at 842x, falling to 220x, is drift from layer 0, not "growing".
        SentenceCase{"far_out_and_shrinking", {{842, 220}}, 0, false},
        SentenceCase{"out_and_growing", {{20, 90}}, 0, true},
        // A decode step that leaves the band earlier than the prefill names the earlier layer.
        SentenceCase{"decode_step_earlier", {{1, 1, 30, 40}, {1, 20, 30, 40}}, 1, true},
        // Inside the band at every step, no trend: no drift.
        SentenceCase{"inside_everywhere", {{1, 2, 1.5}, {2, 1, 3}}, std::nullopt, false}),
    [](const auto& i) { return std::string(i.param.name); });

// ---- the systematic-error statistic ----

// A deterministic stage of `n` values of unit scale, and its f16 rounding.
std::vector<double> stage_values(std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::uint64_t x = 88172645463325252ull;
  for (auto& e : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    e = (double(x >> 11) / double(1ull << 53) - 0.5) * 4;
  }
  return v;
}

Tensor f16_of(const std::vector<double>& v, std::int64_t rows) {
  const Tensor t = Tensor::from_f64({rows, std::int64_t(v.size()) / rows}, v);
  return t.to(DType::f16);
}

struct BiasCase {
  const char* name;
  double scale;      // the candidate stores ref * scale
  bool toward_zero;  // and rounds toward zero instead of to nearest
  bool biased;       // |z| > kDefaultBiasZ
};

class SystematicError : public testing::TestWithParam<BiasCase> {};

// The f16 neighbour of the f16 value `x` one step toward zero.
double f16_toward_zero(double x) {
  const double m = std::fabs(x);
  const int e = std::max(int(std::floor(std::log2(m))), -14);
  const double step = m == std::ldexp(1.0, e) && e > -14 ? std::ldexp(1.0, e - 11) : std::ldexp(1.0, e - 10);
  return std::copysign(m - step, x);
}

TEST_P(SystematicError, PlantedBiasStandsOutAndRoundingDoesNot) {
  const std::int64_t rows = 16, n = rows * 256;
  const std::vector<double> ref = stage_values(n);
  std::vector<double> cand(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = ref[i] * GetParam().scale, nearest = f16_of({v}, 1).at(0);
    cand[i] = GetParam().toward_zero && nearest != 0 && std::fabs(nearest) > std::fabs(v)
                  ? f16_toward_zero(nearest)
                  : nearest;
  }
  const Tensor r = Tensor::from_f64({rows, n / rows}, ref);
  const Tensor c = f16_of(cand, rows), floor = f16_of(ref, rows);
  const TensorView fv = floor.view();
  const BiasFit fit = fit_bias(r.view(), c.view(), &fv);
  ASSERT_TRUE(std::isfinite(fit.slope));
  const double z = fit.slope / fit.se;
  EXPECT_EQ(std::fabs(z) > kDefaultBiasZ, GetParam().biased) << "slope " << fit.slope << " se " << fit.se;
}

INSTANTIATE_TEST_SUITE_P(
    Judges, SystematicError,
    testing::Values(BiasCase{"correct_rounding", 1.0, false, false},
                    BiasCase{"residual_scaled_by_1_plus_2_pow_minus_12", 1 + 0x1p-12, false, true},
                    BiasCase{"layernorm_over_n_minus_1_at_768", std::sqrt(767.0 / 768.0), false, true},
                    BiasCase{"rounded_toward_zero", 1.0, true, true}),
    [](const auto& i) { return std::string(i.param.name); });

struct RowScaleCase {
  const char* name;
  std::int64_t rows;
  double scale;  // every row of the f32 candidate is ref * scale, rounded to f32
  bool biased;
};

class F32RowScale : public testing::TestWithParam<RowScaleCase> {};

// A correct f32 RMSNorm (numpy, Triton) rounds its one 1/rms per row: on a decode step's single
// row that scale is the whole error, and the f32 floor, rounding each element alone, drew none
// like it. Such a scale is no bias; an f16-sized one on the same row still is.
TEST_P(F32RowScale, OneRoundedScalePerRowIsNotABias) {
  const std::int64_t n = GetParam().rows * 64;
  const std::vector<double> ref = stage_values(n);
  std::vector<double> cand(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) cand[i] = double(float(ref[i] * GetParam().scale));
  const Tensor r = Tensor::from_f64({GetParam().rows, 64}, ref);
  const Tensor c = Tensor::from_f64({GetParam().rows, 64}, cand).to(DType::f32);
  const Tensor floor = r.to(DType::f32);
  const TensorView fv = floor.view();
  const BiasFit fit = fit_bias(r.view(), c.view(), &fv);
  ASSERT_TRUE(std::isfinite(fit.slope));
  EXPECT_EQ(std::fabs(fit.slope / fit.se) > kDefaultBiasZ, GetParam().biased)
      << "slope " << fit.slope << " se " << fit.se;
}

INSTANTIATE_TEST_SUITE_P(
    Judges, F32RowScale,
    testing::Values(RowScaleCase{"decode_row_scale_rounded_up_1_5_ulp", 1, 1 + 0x1.8p-24, false},
                    RowScaleCase{"decode_row_scale_rounded_down_2_ulp", 1, 1 - 0x1p-23, false},
                    RowScaleCase{"prefill_rows_scale_1_ulp", 4, 1 + 0x1p-24, false},
                    RowScaleCase{"decode_row_scaled_by_1_plus_2_pow_minus_12", 1, 1 + 0x1p-12, true},
                    RowScaleCase{"prefill_scaled_by_1_plus_2_pow_minus_16", 4, 1 + 0x1p-16, true}),
    [](const auto& i) { return std::string(i.param.name); });

// ---- the systematic judge in runs ----

// The built-in policy with its systematic-error limit turned off: what the judge alone adds.
Policy without_bias_judge() {
  return Policy::from_yaml(
      "rules:\n"
      "  - {mode: isolated, dtype_defaults: true, floor_relief: 8, floor_rms: 2}\n"
      "  - {mode: chained, noise_floor: 8}\n",
      "the built-in policy without bias_z");
}

struct MutantCase {
  const char* name;
  const char* model;
  int layers;
  const char* candidate;
  const char* stage;  // first failing stage, layer 0, step 0, isolated
};

class SystematicMutant : public testing::TestWithParam<MutantCase> {};

TEST_P(SystematicMutant, CaughtAtTheStageThatIntroducesIt) {
  RunOptions o;
  o.model = GetParam().model;
  o.layers = GetParam().layers;
  o.candidate = GetParam().candidate;
  const RunReport passed = run_parity(o, without_bias_judge());
  EXPECT_EQ(passed.exit_code, kExitParity) << "every other limit misses it: " << passed.verdict;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  ASSERT_EQ(r.exit_code, kExitFailure) << r.verdict;
  ASSERT_TRUE(r.first_failure);
  EXPECT_EQ(r.first_failure->key.stage, GetParam().stage);
  EXPECT_EQ(r.first_failure->key.layer, 0);
  EXPECT_EQ(r.first_failure->key.step, 0);
  EXPECT_EQ(r.first_failure->mode, Mode::isolated);
  EXPECT_NE(r.first_failure->note.find("systematic error"), std::string::npos) << r.first_failure->note;
}

INSTANTIATE_TEST_SUITE_P(Judges, SystematicMutant,
                         testing::Values(MutantCase{"layernorm_n_minus_1_width_768", "synthetic:gpt2-small",
                                                    2, "mutant:layernorm-n-minus-1", "ln_1"},
                                         MutantCase{"residual_scale_qwen2", "synthetic:qwen2-tiny", 0,
                                                    "mutant:residual-scale", "residual_1"}),
                         [](const auto& i) { return std::string(i.param.name); });

// Correct candidates on every tiny preset, seeds 0-9, both modes, prefill and three decode rows
// (one-row steps: the inputs' rounding is shared by every output): the judge adds no failure.
TEST(SystematicJudge, NoFalseAlarmOnCorrectCandidates) {
  const Policy policy = Policy::dtype_defaults();
  for (const char* preset : {"llama-tiny", "qwen2-tiny", "llama-deep-tiny", "qwen3-tiny", "gpt2-tiny",
                             "qwen35-tiny", "qwen2-tails-tiny", "llama3-tiny", "qwen2-bias-tiny"})
    for (const char* candidate : {"cpu-f16", "simt"})
      for (std::uint64_t seed = 0; seed < 10; ++seed) {
        RunOptions o;
        o.model = fmt::format("synthetic:{}", preset);
        o.candidate = candidate;
        o.seed = seed;
        o.modes = {Mode::isolated, Mode::chained};
        o.decode_steps = 3;
        const RunReport r = run_parity(o, policy);
        EXPECT_EQ(r.exit_code, kExitParity)
            << preset << " " << candidate << " seed " << seed << ": " << r.verdict
            << (r.first_failure ? " " + r.first_failure->note : "");
      }
}

// ---- a run that judged no stage ----

TEST(Conclude, ZeroJudgedStagesIsAFailure) {
  RunReport report;
  conclude(report);
  EXPECT_EQ(report.exit_code, kExitFailure);
  EXPECT_NE(report.verdict.find("no stage was judged"), std::string::npos);
}

}  // namespace
}  // namespace ds
