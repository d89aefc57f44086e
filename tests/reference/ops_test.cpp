// The oracle's ops on hand-checked inputs and on their defining properties.
#include <gtest/gtest.h>

#include <cmath>

#include "ops.h"
#include "parallel.h"
#include "test_util.h"

namespace ds::ref {
namespace {

using test::mat;
using test::max_abs_diff;
using test::vec;

TEST(OpsHand, RmsNormOfTwoElements) {
  // mean(x^2) = (9 + 16) / 2 = 12.5.
  const Tensor y = rmsnorm(mat(1, 2, {3, 4}), vec({1, 2}), 0.0, false, 2);
  EXPECT_DOUBLE_EQ(y.at(0), 0.848528137423857);
  EXPECT_DOUBLE_EQ(y.at(1), 2.262741699796952);
  const Tensor p = rmsnorm(mat(1, 2, {3, 4}), vec({0, 1}), 0.0, true, 2);  // (1 + w) form
  EXPECT_EQ(max_abs_diff(p, y), 0.0);
}

TEST(OpsHand, LayerNormOfThreeElements) {
  const Tensor y = layernorm(mat(1, 3, {1, 2, 3}), vec({1, 1, 2}), vec({0, 0.5, 0}), 0.0);
  EXPECT_NEAR(y.at(0), -1.224744871391589, 1e-15);
  EXPECT_DOUBLE_EQ(y.at(1), 0.5);
  EXPECT_NEAR(y.at(2), 2 * 1.224744871391589, 1e-15);
}

TEST(OpsHand, LinearWithBias) {
  const Tensor w = mat(3, 2, {1, 0, 2, 3, -1, 1});
  const Tensor b = vec({0.5, 0, -1});
  const Tensor y = linear(mat(1, 2, {1, 2}), w, &b);
  EXPECT_EQ(y.at(0), 1.5);
  EXPECT_EQ(y.at(1), 8.0);
  EXPECT_EQ(y.at(2), 0.0);
}

TEST(OpsHand, RopeNeoxAndNormalAtPositionOne) {
  // theta 10000, R = 4: inv_freq = {1, 0.01}.
  const Tensor x = mat(1, 4, {1, 2, 3, 4});
  const Tensor n = rope(x, 4, 4, 1, 10000.0, RopeMode::neox);  // pairs (0,2), (1,3)
  EXPECT_NEAR(n.at(0), -1.9841106485555495, 1e-15);
  EXPECT_NEAR(n.at(1), 1.959900667496664, 1e-15);
  EXPECT_NEAR(n.at(2), 2.4623779024123156, 1e-15);
  EXPECT_NEAR(n.at(3), 4.019799668334994, 1e-15);
  const Tensor g = rope(x, 4, 4, 1, 10000.0, RopeMode::normal);  // pairs (0,1), (2,3)
  EXPECT_NEAR(g.at(0), -1.1426396637476532, 1e-15);
  EXPECT_NEAR(g.at(1), 1.922075596544176, 1e-15);
  EXPECT_NEAR(g.at(2), 2.9598506679133294, 1e-15);
  EXPECT_NEAR(g.at(3), 4.029799501669161, 1e-15);
}

TEST(OpsHand, PartialRopeLeavesTailDims) {
  const Tensor x = mat(1, 8, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor y = rope(x, 8, 4, 3, 10000.0, RopeMode::neox);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(y.at(i), x.at(i));
}

TEST(OpsHand, GeluNew) {
  const Tensor y = gelu_new(mat(1, 2, {1.0, -2.0}));
  EXPECT_NEAR(y.at(0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(y.at(1), -0.04540230591222494, 1e-15);
}

TEST(OpsProperty, RopeAtPositionZeroIsIdentity) {
  const Tensor x = test::random({1, 64}, 3);
  for (auto mode : {RopeMode::neox, RopeMode::normal})
    EXPECT_EQ(max_abs_diff(rope(x, 16, 16, 0, 1e6, mode), x), 0.0);
}

TEST(OpsProperty, SoftmaxRowsSumToOneAndAreCausal) {
  // V = identity over positions: the attention output is the probability row itself.
  const int P = 6, d = P, T = 3, pos0 = P - T;
  const Tensor q = test::random({T, d}, 5);
  const Tensor k = test::random({P, d}, 6);
  Tensor v(DType::f64, {P, d});
  for (int j = 0; j < P; ++j) v.data<double>()[j * d + j] = 1.0;
  const Tensor o = attention(q, k, v, 1, 1, d, pos0, {0.25, false});
  for (int t = 0; t < T; ++t) {
    double sum = 0;
    for (int j = 0; j < P; ++j) {
      const double p = o.at(t * d + j);
      if (j > pos0 + t) {
        EXPECT_EQ(p, 0.0) << "token " << t << " sees future key " << j;
      }
      EXPECT_GE(p, 0.0);
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-14);
  }
}

TEST(OpsProperty, SlidingWindowSeesOnlyTheLastKeys) {
  const int P = 6, d = P, T = 4, pos0 = P - T, window = 2;
  const Tensor q = test::random({T, d}, 5);
  const Tensor k = test::random({P, d}, 6);
  Tensor v(DType::f64, {P, d});
  for (int j = 0; j < P; ++j) v.data<double>()[j * d + j] = 1.0;
  const Tensor o = attention(q, k, v, 1, 1, d, pos0, {0.25, false}, window);
  for (int t = 0; t < T; ++t) {
    double sum = 0;
    for (int j = 0; j < P; ++j) {
      const bool visible = j <= pos0 + t && j > pos0 + t - window;
      if (!visible) {
        EXPECT_EQ(o.at(t * d + j), 0.0) << t << "," << j;
      } else {
        EXPECT_GT(o.at(t * d + j), 0.0) << t << "," << j;
      }
      sum += o.at(t * d + j);
    }
    EXPECT_NEAR(sum, 1.0, 1e-14);
  }
}

TEST(OpsProperty, GqaEqualsMhaWithRepeatedKv) {
  const int H = 6, Hkv = 2, d = 8, P = 5, T = 5, r = H / Hkv;
  const Tensor q = test::random({T, H * d}, 7);
  const Tensor k = test::random({P, Hkv * d}, 8);
  const Tensor v = test::random({P, Hkv * d}, 9);
  Tensor kr(DType::f64, {P, H * d}), vr(DType::f64, {P, H * d});
  for (int p = 0; p < P; ++p)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < d; ++i) {
        kr.data<double>()[(p * H + h) * d + i] = k.at((p * Hkv + h / r) * d + i);
        vr.data<double>()[(p * H + h) * d + i] = v.at((p * Hkv + h / r) * d + i);
      }
  const AttnScale s{1.0 / std::sqrt(double(d)), false};
  EXPECT_EQ(max_abs_diff(attention(q, k, v, H, Hkv, d, 0, s), attention(q, kr, vr, H, H, d, 0, s)), 0.0);
}

TEST(OpsProperty, ThreadedLinearKeepsItsSummationOrderBitExactly) {
  // Large enough to be split over threads.
  // 3 x 1024 x 2048 multiply-adds: enough work for up to 7 threads.
  const Tensor x = test::random({3, 2048}, 10);
  const Tensor w = test::random({1024, 2048}, 11);
  const Tensor y = linear(x, w, nullptr);
  for (int threads : {1, 2, 3, 7}) {
    set_worker_threads(threads);
    EXPECT_EQ(worker_count(3 * 1024 * 2048), threads);
    EXPECT_EQ(max_abs_diff(linear(x, w, nullptr), y), 0.0) << threads << " threads";
  }
  set_worker_threads(0);
  // The documented order: lane i % 4, lanes combined as (l0 + l1) + (l2 + l3).
  for (int r = 0; r < 3; ++r)
    for (int o = 0; o < 1024; o += 97) {
      double lane[4] = {0, 0, 0, 0};
      for (int i = 0; i < 2048; ++i) lane[i % 4] += w.at(o * 2048 + i) * x.at(r * 2048 + i);
      EXPECT_EQ(y.at(r * 1024 + o), (lane[0] + lane[1]) + (lane[2] + lane[3]));
    }
}

TEST(OpsProperty, F32WeightsGiveTheSameResultAsWidened) {
  const Tensor x = test::random({2, 16}, 12);
  const Tensor w = test::random({8, 16}, 13).to(DType::f32);
  EXPECT_EQ(max_abs_diff(linear(x, w, nullptr), linear(x, w.to(DType::f64), nullptr)), 0.0);
}

TEST(OpsProperty, StorageRoundingRoundsEveryElement) {
  const Tensor x = test::random({4, 4}, 14);
  const Tensor r = round_stage(x, DType::bf16);
  for (std::int64_t i = 0; i < r.numel(); ++i) EXPECT_EQ(r.at(i), double(bf16_to_f32(f64_to_bf16(x.at(i)))));
}

}  // namespace
}  // namespace ds::ref

namespace ds::ref {
namespace {

TEST(OpsHand, Llama3RopeScalingFactors) {
  // Llama 3.2: theta 5e5, factor 32, low 1, high 4, original context 8192, head_dim 64.
  const auto f = llama3_freq_factors(64, 500000.0, 32.0, 1.0, 4.0, 8192.0);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_EQ(f.front(), 1.0);  // wavelength 2*pi < 8192 / 4: unscaled
  EXPECT_EQ(f.back(), 32.0);  // wavelength > 8192: divided by the factor
  for (std::size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
  // A pair in the smooth band: wavelength w, smooth = (8192 / w - 1) / 3.
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double w = 2 * M_PI * std::pow(500000.0, 2.0 * double(i) / 64);
    if (w < 2048 || w > 8192) continue;
    const double s = (8192 / w - 1) / 3;
    EXPECT_NEAR(f[i], 1 / ((1 - s) / 32 + s), 1e-12) << i;
  }
  const Tensor x = test::random({2, 64}, 15);
  const std::vector<double> ones(32, 1.0);
  EXPECT_EQ(
      max_abs_diff(rope(x, 64, 64, 7, 5e5, RopeMode::neox, ones), rope(x, 64, 64, 7, 5e5, RopeMode::neox)),
      0.0);
}

}  // namespace
}  // namespace ds::ref
