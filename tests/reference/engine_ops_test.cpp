// Engine numerics (numerics.h) and the floor runs' ops (engine_ops.h): the spellings a user types,
// and each op against its definition or a published measurement of the engine it models.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "engine_ops.h"
#include "load_model.h"
#include "numerics.h"
#include "reference.h"
#include "test_util.h"

namespace ds::ref {
namespace {

using test::mat;

struct SpecCase {
  const char* name;
  const char* spec;
  const char* resolved;  // numerics_str of the parse; nullptr: refused
  const char* error;     // a part of the refusal
};

const SpecCase kSpecs[] = {
    {"profile_one_rounding", "one-rounding", "one-rounding", nullptr},
    {"profile_f32", "f32", "accum=f32", nullptr},
    {"profile_llama_cpp_f32", "llama.cpp-f32", "accum=f32,rope=f32-recurrence,gelu=f16-table,act-quant=ggml",
     nullptr},
    {"profile_llama_cpp_default", "llama.cpp-default",
     "accum=f32,rope=f32-recurrence,attention=f16-flash,gelu=f16-table,act-quant=ggml,kv-cache=f16", nullptr},
    {"profile_hf_f32", "hf-f32", "accum=f32,rope=f32-product", nullptr},
    {"profile_then_override", "llama.cpp-f32,gelu=exact", "accum=f32,rope=f32-recurrence,act-quant=ggml",
     nullptr},
    {"pairs_only", "kv-cache=f16,act-quant=q8_k", "act-quant=q8_k,kv-cache=f16", nullptr},
    {"unknown_profile", "llama.cpp-f33", nullptr, "unknown profile 'llama.cpp-f33'"},
    {"profile_not_first", "gelu=exact,hf-f32", nullptr, "profile 'hf-f32' must come first"},
    {"unknown_key", "f32,bogus=1", nullptr, "unknown key 'bogus'"},
    {"bad_value", "accum=f16", nullptr, "accum=f16: expected one of exact, f32"},
    {"integer_kv_cache", "kv-cache=i32", nullptr, "kv-cache=i32: expected f32, f16 or bf16"},
    {"empty", "", nullptr, "empty"},
};

class NumericsSpec : public testing::TestWithParam<SpecCase> {};

TEST_P(NumericsSpec, ParsesOrNamesWhatIsWrong) {
  const SpecCase& c = GetParam();
  if (c.resolved) {
    const Numerics n = parse_numerics(c.spec);
    EXPECT_EQ(numerics_str(n), c.resolved);
    EXPECT_EQ(parse_numerics(numerics_str(n)), n) << "the printed spelling reads back";
  } else {
    try {
      parse_numerics(c.spec);
      FAIL() << "accepted " << c.spec;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, NumericsSpec, testing::ValuesIn(kSpecs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(NumericsDefault, F32StorageSumsInF32AndNarrowerRoundsOnce) {
  EXPECT_EQ(numerics_str(default_numerics(DType::f32)), "accum=f32");
  EXPECT_TRUE(default_numerics(DType::f16).one_rounding());
  EXPECT_TRUE(default_numerics(DType::bf16).one_rounding());
}

Tensor random_rows(std::int64_t rows, std::int64_t width, unsigned seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, scale);
  Tensor t(DType::f64, {rows, width});
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = double(float(n(rng)));
  return t;
}

TEST(EngineLinear, SumsEachElementInF32OneTermAfterAnother) {
  const Tensor x = random_rows(3, 96, 1), w = random_rows(5, 96, 2);
  Tensor wf(DType::f32, w.shape());
  for (std::int64_t i = 0; i < w.numel(); ++i) wf.data<float>()[i] = float(w.at(i));
  const Tensor y = linear_f32(x, wf, nullptr);
  for (std::int64_t r = 0; r < 3; ++r)
    for (std::int64_t o = 0; o < 5; ++o) {
      float acc = 0;
      for (std::int64_t i = 0; i < 96; ++i)
        acc = std::fma(float(w.at(o * 96 + i)), float(x.at(r * 96 + i)), acc);
      EXPECT_EQ(y.at(r * 5 + o), double(acc)) << r << "," << o;
    }
}

TEST(EngineLinear, ErrorGrowsWithTheAccumulationLength) {
  // The reason the floor models it: an f32 sum's error grows with the number of terms.
  double err_short = 0, err_long = 0;
  for (std::int64_t n : {64, 4096}) {
    const Tensor x = random_rows(8, n, 3), w = random_rows(16, n, 4);
    const Tensor exact = linear(x, w, nullptr), f32 = linear_f32(x, w, nullptr);
    double e = 0;
    for (std::int64_t i = 0; i < exact.numel(); ++i) e = std::max(e, std::fabs(exact.at(i) - f32.at(i)));
    (n == 64 ? err_short : err_long) = e;
  }
  EXPECT_GT(err_long, 8 * err_short);
}

TEST(EngineActivations, Q8BlocksKeepEveryValueWithinHalfAStep) {
  for (auto q : {Numerics::ActQuant::q8_0, Numerics::ActQuant::q8_k}) {
    const std::int64_t block = q == Numerics::ActQuant::q8_0 ? 32 : 256;
    const Tensor x = random_rows(2, 512, 5);
    const Tensor y = engine_activations(x, q, "", DType::f32);
    for (std::int64_t b = 0; b < x.numel(); b += block) {
      double amax = 0;
      for (std::int64_t i = b; i < b + block; ++i) amax = std::max(amax, std::fabs(x.at(i)));
      // Half a step, plus (Q8_0) the f16 rounding of the step itself times the largest level, 127.
      const double step = amax / 127,
                   slack = q == Numerics::ActQuant::q8_0 ? 127 * step * 0x1p-11 : 1e-6 * step;
      for (std::int64_t i = b; i < b + block; ++i)
        EXPECT_LE(std::fabs(y.at(i) - x.at(i)), step * 0.5 + slack);
      bool moved = false;
      for (std::int64_t i = b; i < b + block; ++i) moved |= y.at(i) != x.at(i);
      EXPECT_TRUE(moved) << "block " << b << " was quantized";
    }
  }
}

TEST(EngineActivations, GgmlPicksByTheWeightsFileType) {
  const Tensor x = random_rows(1, 256, 6);
  const auto same = [](const Tensor& a, const Tensor& b) {
    for (std::int64_t i = 0; i < a.numel(); ++i)
      if (a.at(i) != b.at(i)) return false;
    return true;
  };
  const Tensor q8_0 = engine_activations(x, Numerics::ActQuant::q8_0, "", DType::f32);
  const Tensor q8_k = engine_activations(x, Numerics::ActQuant::q8_k, "", DType::f32);
  for (const char* t : {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL"})
    EXPECT_TRUE(same(engine_activations(x, Numerics::ActQuant::ggml, t, DType::f32), q8_0)) << t;
  for (const char* t : {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"})
    EXPECT_TRUE(same(engine_activations(x, Numerics::ActQuant::ggml, t, DType::f32), q8_k)) << t;
  EXPECT_TRUE(same(engine_activations(x, Numerics::ActQuant::ggml, "F32", DType::f32), x));
  EXPECT_TRUE(
      same(engine_activations(x, Numerics::ActQuant::ggml, "F16", DType::f32), round_stage(x, DType::f16)));
  EXPECT_TRUE(
      same(engine_activations(x, Numerics::ActQuant::ggml, "", DType::bf16), round_stage(x, DType::bf16)));
}

// ggml's Q4_1 x Q8_1 dot product (vec_dot_q4_1_q8_1), written out per block of 32:
// d_w * d_a * sum(q_w q_a) + m_w * f16(d_a * sum(q_a)), with d_a = amax / 127 (f16 where it scales the
// products) and q_a = x / d_a rounded to the nearest, ties to even. The floor's linear for a weight
// of file type Q4_1 must give that; the same weights labelled Q4_0 (Q8_0 activations, no f16 sum)
// must not, or the test could not tell.
TEST(EngineLinear, Q4_1WeightsAddEachBlocksMinimumTimesTheF16ActivationSum) {
  constexpr int kIn = 64, kOut = 3;
  const Tensor x = random_rows(2, kIn, 11);
  std::mt19937 gen(12);
  std::uniform_int_distribution<int> q(0, 15);
  // Scales and minimums on a grid, so that every dequantized weight q * d + m is exact in f32.
  std::uniform_int_distribution<int> dm(10, 100), mm(13, 60);
  Tensor w(DType::f32, {kOut, kIn});
  std::vector<float> d(kOut * 2), m(kOut * 2);
  std::vector<int> qw(kOut * kIn);
  for (int o = 0; o < kOut; ++o)
    for (int b = 0; b < 2; ++b) {
      d[o * 2 + b] = float(dm(gen)) / 1024;
      m[o * 2 + b] = -float(mm(gen)) / 64;
      for (int j = 0; j < 32; ++j) {
        const int i = b * 32 + j;
        qw[o * kIn + i] = j == 5 ? 0 : q(gen);  // the block's minimum maps to q = 0
        w.data<float>()[o * kIn + i] = float(qw[o * kIn + i]) * d[o * 2 + b] + m[o * 2 + b];
      }
    }
  const Numerics ggml = parse_numerics("act-quant=ggml");
  const Tensor y = numerics_linear(x, w, nullptr, ggml, "Q4_1");
  const Tensor y0 = numerics_linear(x, w, nullptr, ggml, "Q4_0");
  double worst = 0, worst0 = 0;
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < kOut; ++o) {
      double want = 0;
      for (int b = 0; b < 2; ++b) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(float(x.at(r * kIn + b * 32 + j))));
        const float da = amax / 127.0f, ida = 1.0f / da;
        double dot = 0, sum = 0;
        for (int j = 0; j < 32; ++j) {
          const double qa = std::nearbyint(float(x.at(r * kIn + b * 32 + j)) * ida);
          dot += qa * qw[o * kIn + b * 32 + j];
          sum += qa;
        }
        want += double(d[o * 2 + b]) * double(f16_to_f32(f32_to_f16(da))) * dot +
                double(m[o * 2 + b]) * double(f16_to_f32(f32_to_f16(float(da * sum))));
      }
      worst = std::max(worst, std::fabs(y.at(r * kOut + o) - want));
      worst0 = std::max(worst0, std::fabs(y0.at(r * kOut + o) - want));
    }
  EXPECT_LT(worst, 1e-9);
  EXPECT_GT(worst0, 1e-6);
}

TEST(EngineActivations, ARowOfPartialBlocksIsRefusedNamingIt) {
  EXPECT_THROW(engine_activations(random_rows(1, 48, 7), Numerics::ActQuant::q8_0, "", DType::f32),
               std::invalid_argument);
}

// llama.cpp's RoPE angles in f32 (README of the llama.cpp peer folder, measured with llama.cpp on
// the llama-tiny fixture): q_rope off by about 1e-6 below position 16, 1e-5 near 128, 5e-5 near 512
// and 1.8e-4 near 1500. The floor run of llama.cpp-f32 numerics on the same model and a prompt of
// 1500 tokens must show errors of that order at those positions (within a factor of 10: 2.7e-5 at
// rows 1496-1500 of layer 0 here, from other prompt tokens than llama.cpp was given), growing.
TEST(EngineRope, LlamaCppF32FloorGrowsWithPositionAsMeasuredInLlamaCpp) {
  const auto model =
      std::make_shared<const Model>(load_model(DRIFTSCOPE_FIXTURES_DIR "/models/llama-tiny.gguf"));
  Reference oracle(model),
      floor(model, ReferenceOptions{.storage = DType::f32, .numerics = parse_numerics("llama.cpp-f32")});
  const int T = 1501;
  Tensor x0 = oracle.embed(test::token_ids(T, model->config.vocab, 1), 0)["embed"];
  const Tensor exact = oracle.layer(0, x0, 0)["q_rope"], f32 = floor.layer(0, x0, 0)["q_rope"];
  const std::int64_t W = exact.dim(1);
  const auto row_error = [&](int from, int to) {
    double e = 0;
    for (std::int64_t i = from * W; i < (to + 1) * W; ++i)
      e = std::max(e, std::fabs(exact.at(i) - f32.at(i)));
    return e;
  };
  double previous = 0;
  for (auto [pos, measured] : {std::pair{12, 1e-6}, {128, 1e-5}, {512, 5e-5}, {1500, 1.8e-4}}) {
    const double e = row_error(pos - 4, pos);
    EXPECT_GT(e, measured / 10) << "position " << pos;
    EXPECT_LT(e, measured * 10) << "position " << pos;
    EXPECT_GT(e, previous) << "position " << pos;
    previous = e;
  }
}

TEST(EngineRope, ExactAnglesAreTheOraclesRope) {
  const Tensor x = random_rows(3, 32, 9);
  const Tensor a = rope(x, 16, 16, 7, 10000.0, RopeMode::neox);
  const Tensor b = engine_rope(x, 16, 16, 7, 10000.0, RopeMode::neox, {}, Numerics::RopeAngles::exact);
  for (std::int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(a.at(i), b.at(i));
}

TEST(EngineGelu, TheF16TableRoundsInputAndOutputAndClampsTheTails) {
  const Tensor x = mat(1, 5, {-11.0, -0.3, 0.5, 1.2345678, 12.0});
  const Tensor y = gelu_f16_table(x);
  EXPECT_EQ(y.at(0), 0.0);
  EXPECT_EQ(y.at(4), 12.0);
  const Tensor exact = gelu_new(round_stage(x, DType::f16));
  for (int i = 1; i < 4; ++i) EXPECT_EQ(y.at(i), round_to(DType::f16, exact.at(i))) << i;
  EXPECT_NE(y.at(3), gelu_new(x).at(3)) << "the input was rounded to f16 first";
}

TEST(EngineAttention, F16FlashStaysWithinF16ErrorAndDiffersFromExact) {
  const int heads = 2, d = 16, P = 24;
  const Tensor q = random_rows(1, heads * d, 10), k = random_rows(P, heads * d, 11),
               v = random_rows(P, heads * d, 12);
  const Tensor exact = attention(q, k, v, heads, heads, d, P - 1, {0.25, false});
  Numerics n = parse_numerics("llama.cpp-default");
  const Tensor flash = engine_attention(q, round_stage(k, DType::f16), round_stage(v, DType::f16), heads,
                                        heads, d, P - 1, {0.25, false}, 0, n);
  double e = 0;
  for (std::int64_t i = 0; i < exact.numel(); ++i) e = std::max(e, std::fabs(exact.at(i) - flash.at(i)));
  EXPECT_GT(e, 1e-5);
  EXPECT_LT(e, 2e-2);
}

}  // namespace
}  // namespace ds::ref
