// The GPT-2 kernels alone, through the SIMT runtime: LayerNorm with bias, gelu_new, the
// embedding with learned positions, and MHA reading q / k / v in place from fused c_attn rows.
// Each against a double-precision computation from the same f16 inputs, bitwise identical
// under every SIMT thread order; and each planted bug of these kernels shown to be the bug
// it claims to be.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace {

using namespace kt;

double gelu_new(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// ---------------------------------------------------------------------------------------

struct LayerNormCase {
  std::string name;
  int rows, width;
  double mean;  // rows are N(mean, 1): a residual stream need not be centred
};
void PrintTo(const LayerNormCase& c, std::ostream* os) { *os << c.name; }
class LayerNorm : public testing::TestWithParam<LayerNormCase> {};

// (x - mean) * rsqrt(var + eps) * w + b, per row, with the biased variance.
std::vector<double> layernorm_ref(const std::vector<double>& x, int rows, int width,
                                  const std::vector<float>& w, const std::vector<float>& b, double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const double* xr = x.data() + std::size_t(r) * width;
    double mean = 0, var = 0;
    for (int c = 0; c < width; ++c) mean += xr[c];
    mean /= width;
    for (int c = 0; c < width; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    const double inv = 1.0 / std::sqrt(var / width + eps);
    for (int c = 0; c < width; ++c)
      y[std::size_t(r) * width + c] = (xr[c] - mean) * inv * w[std::size_t(c)] + b[std::size_t(c)];
  }
  return y;
}

TEST_P(LayerNorm, MatchesDoubleAndIsOrderIndependent) {
  const auto& p = GetParam();
  const Bits xb = to_f16(normal(std::size_t(p.rows) * p.width, 1.0, 31, p.mean));
  const auto w = to_f32(normal(std::size_t(p.width), 0.05, 32, 1.0));
  const auto b = to_f32(normal(std::size_t(p.width), 0.1, 33));
  Buf dx(xb), dw(w), db(b), dy(xb.size() * 2);
  const Bits got = same_under_every_order(
      [&] { K().layernorm(dx.p, dw.as<float>(), db.as<float>(), dy.p, p.rows, p.width, 1e-5f); },
      [&] { return dy.bits(); });
  expect_close(got, layernorm_ref(f16_values(xb), p.rows, p.width, w, b, 1e-5), 1e-5, "layernorm");
}
INSTANTIATE_TEST_SUITE_P(Shapes, LayerNorm,
                         testing::Values(LayerNormCase{"gpt2_tiny_row", 1, 64, 0.0},
                                         LayerNormCase{"gpt2_small_rows", 3, 768, 0.0},
                                         LayerNormCase{"offset_mean", 2, 100, 8.0},
                                         LayerNormCase{"ragged_width", 5, 33, 0.0},
                                         LayerNormCase{"negative_offset_wide", 1, 1000, -3.0}),
                         [](const auto& info) { return info.param.name; });

// The no-mean-subtraction bug is exactly that: bit-identical on rows whose f16 values sum to
// zero exactly (x and -x pairs), and wrong by the factor sqrt(var / (var + mean^2)) on a row
// with a mean.
TEST(LayerNormMutant, NoMeanSubIsInvisibleOnCentredRowsAndWrongOnOffsetOnes) {
  const int width = 64;
  std::vector<double> centred = normal(width / 2, 1.0, 34), offset = normal(width, 1.0, 35, 2.0);
  for (int i = 0; i < width / 2; ++i) centred.push_back(-centred[std::size_t(i)]);
  const auto w = to_f32(std::vector<double>(width, 1.0)), b = to_f32(std::vector<double>(width, 0.0));
  Buf dw(w), db(b), dy(std::size_t(width) * 2);
  const dsk::KernelTable& bug = Mutant("layernorm-no-mean-sub");
  auto run = [&](const std::vector<double>& x, const dsk::KernelTable& kt = K()) {
    Buf dx(to_f16(x));
    kt.layernorm(dx.p, dw.as<float>(), db.as<float>(), dy.p, 1, width, 1e-5f);
    return dy.bits();
  };
  EXPECT_EQ(run(centred), run(centred, bug));
  const auto good = f16_values(run(offset)), bad = f16_values(run(offset, bug));
  // With w = 1 and b = 0 a correct LayerNorm output has unit variance; the bug's is
  // var / (var + mean^2), about 1/5 for N(2, 1) rows.
  double ss_good = 0, ss_bad = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    ss_good += good[i] * good[i];
    ss_bad += bad[i] * bad[i];
  }
  EXPECT_NEAR(ss_good / width, 1.0, 1e-2);
  EXPECT_LT(ss_bad / width, 0.5);
}

// ---------------------------------------------------------------------------------------

struct GeluCase {
  std::string name;
  int n;
  double std;
};
void PrintTo(const GeluCase& c, std::ostream* os) { *os << c.name; }
class Gelu : public testing::TestWithParam<GeluCase> {};
TEST_P(Gelu, MatchesGeluNewInDoubleAndIsOrderIndependent) {
  const auto& p = GetParam();
  const Bits xb = to_f16(normal(std::size_t(p.n), p.std, 36));
  Buf dx(xb), dy(xb.size() * 2);
  const Bits got = same_under_every_order([&] { K().gelu(dx.p, dy.p, p.n); }, [&] { return dy.bits(); });
  std::vector<double> ref;
  for (double x : f16_values(xb)) ref.push_back(gelu_new(x));
  // 1e-6 absolute: f32 tanh next to -1 leaves ~6e-8 of 1 + tanh, times 0.5 |x|.
  expect_close(got, ref, 1e-6, "gelu");
}
INSTANTIATE_TEST_SUITE_P(Shapes, Gelu,
                         testing::Values(GeluCase{"one_element", 1, 1.0}, GeluCase{"partial_block", 255, 0.2},
                                         GeluCase{"block_plus_one", 257, 1.0},
                                         GeluCase{"saturating_tails", 4096, 6.0}),
                         [](const auto& info) { return info.param.name; });

TEST(Gelu, InPlaceGivesTheSameBits) {
  const Bits xb = to_f16(normal(1000, 2.0, 37));
  Buf a(xb), b(xb), y(xb.size() * 2);
  K().gelu(a.p, y.p, 1000);
  K().gelu(b.p, b.p, 1000);
  EXPECT_EQ(y.bits(), b.bits());
}

// ---------------------------------------------------------------------------------------

struct EmbedPosCase {
  std::string name;
  WType wt;
  int T, pos0;
};
void PrintTo(const EmbedPosCase& c, std::ostream* os) { *os << c.name; }
class EmbeddingWithPositions : public testing::TestWithParam<EmbedPosCase> {};
TEST_P(EmbeddingWithPositions, AddsRowPos0PlusTInF32) {
  const auto& p = GetParam();
  const int V = 50, D = 70, n_pos = 16;
  const Weights w = make_weights(p.wt, std::size_t(V) * D, 38);
  const auto pos = to_f32(normal(std::size_t(n_pos) * D, 0.1, 39));
  std::vector<std::int32_t> tok;
  for (int t = 0; t < p.T; ++t) tok.push_back((7 * t + 3) % V);
  Buf dw(w.bytes), dp(pos), dt(tok), out(std::size_t(p.T) * D * 2);
  const Bits got = same_under_every_order(
      [&] { K().embedding(dw.p, p.wt, dt.as<std::int32_t>(), dp.as<float>(), p.pos0, out.p, p.T, D); },
      [&] { return out.bits(); });
  std::vector<double> ref;
  for (int t = 0; t < p.T; ++t)
    for (int c = 0; c < D; ++c)
      ref.push_back(w.values[std::size_t(tok[std::size_t(t)]) * D + c] +
                    pos[std::size_t(p.pos0 + t) * D + c]);
  expect_close(got, ref, 0, "embedding + positions");
}
INSTANTIATE_TEST_SUITE_P(Shapes, EmbeddingWithPositions,
                         testing::Values(EmbedPosCase{"prefill_f32", WType::f32, 5, 0},
                                         EmbedPosCase{"decode_f16", WType::f16, 1, 9},
                                         EmbedPosCase{"chunk_bf16", WType::bf16, 3, 13}),
                         [](const auto& info) { return info.param.name; });

// The no-offset bug agrees with the correct kernel on a prefill and reads position t instead
// of pos0 + t after it.
TEST(EmbeddingMutant, PosNoOffsetIsRightForThePrefillOnly) {
  const int V = 8, D = 32, T = 2;
  const Weights w = make_weights(WType::f32, std::size_t(V) * D, 40);
  const auto pos = to_f32(normal(std::size_t(8) * D, 0.1, 41));
  const std::vector<std::int32_t> tok = {1, 5};
  Buf dw(w.bytes), dp(pos), dt(tok), out(std::size_t(T) * D * 2);
  const dsk::KernelTable& bug = Mutant("pos-no-offset");
  auto run = [&](int pos0, const dsk::KernelTable& kt = K()) {
    kt.embedding(dw.p, WType::f32, dt.as<std::int32_t>(), dp.as<float>(), pos0, out.p, T, D);
    return out.bits();
  };
  EXPECT_EQ(run(0), run(0, bug));
  EXPECT_NE(run(4), run(4, bug));
  EXPECT_EQ(run(0), run(4, bug));  // positions 0 and 1 again
}

// ---------------------------------------------------------------------------------------

struct MhaCase {
  std::string name;
  int T, pos0, heads, hd;
};
void PrintTo(const MhaCase& c, std::ostream* os) { *os << c.name; }
class MhaOnFusedQkvRows : public testing::TestWithParam<MhaCase> {};

// GPT-2's attention reads q, k and v as strided views of the c_attn rows [q | k | v]; the
// result must be the very bits of the same kernel on packed copies (whose correctness against
// double is kernels.Shapes/Attention).
TEST_P(MhaOnFusedQkvRows, StridedViewsGiveThePackedResultBitForBit) {
  const auto& p = GetParam();
  const int D = p.heads * p.hd, P = p.pos0 + p.T, ld = 3 * D;
  const Bits rows = to_f16(normal(std::size_t(P) * ld, 1.0, 42));  // the cache: every position's c_attn row
  auto cols = [&](int first_row, int n_rows, int first_col) {
    Bits b;
    for (int r = first_row; r < first_row + n_rows; ++r)
      b.insert(b.end(), rows.begin() + std::ptrdiff_t(std::size_t(r) * ld + first_col),
               rows.begin() + std::ptrdiff_t(std::size_t(r) * ld + first_col + D));
    return b;
  };
  // This step's own rows are the last T rows of the cache.
  const Bits step(rows.begin() + std::ptrdiff_t(std::size_t(p.pos0) * ld), rows.end());
  Buf fused_q(step), fused_cache(rows), q(cols(p.pos0, p.T, 0)), k(cols(0, P, D)), v(cols(0, P, 2 * D)),
      out_strided(std::size_t(p.T) * D * 2), out_packed(std::size_t(p.T) * D * 2);
  const auto* cache = fused_cache.as<std::uint16_t>();
  const Bits got = same_under_every_order(
      [&] {
        K().attention(fused_q.p, cache + D, cache + 2 * D, out_strided.p, p.T, P, p.pos0, p.heads, p.heads,
                      p.hd, ld, ld);
      },
      [&] { return out_strided.bits(); });
  K().attention(q.p, k.p, v.p, out_packed.p, p.T, P, p.pos0, p.heads, p.heads, p.hd, D, D);
  EXPECT_EQ(got, out_packed.bits());
}
INSTANTIATE_TEST_SUITE_P(Shapes, MhaOnFusedQkvRows,
                         testing::Values(MhaCase{"gpt2_tiny_prefill", 4, 0, 4, 16},
                                         MhaCase{"gpt2_small_heads_decode", 1, 7, 12, 64},
                                         MhaCase{"ragged_head_dim_chunk", 3, 2, 2, 40}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
