// Gated DeltaNet ops: the recurrence against its closed form, the conv state variants, and
// the head maps.
#include <gtest/gtest.h>

#include <cmath>

#include "ops.h"
#include "test_util.h"

namespace ds {
// gtest finds a printer by ADL, so in the enum's namespace; static: this file's own.
static void PrintTo(GdnHeadMap m, std::ostream* os) { *os << gdn_head_map_name(m); }
}  // namespace ds

namespace ds::ref {
namespace {

ModelConfig gdn_config(int nk, int nv, int dk, int dv, GdnHeadMap map) {
  ModelConfig c;
  c.gdn_k_heads = nk;
  c.gdn_v_heads = nv;
  c.gdn_k_dim = dk;
  c.gdn_v_dim = dv;
  c.gdn_head_map = map;
  return c;
}

// S_t = e^{g}(I - beta k k^T) S_{t-1} + beta k v^T;  o_t = S_t^T q, with explicit matrices.
Tensor closed_form(const ModelConfig& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                   const Tensor& beta) {
  const int nk = c.gdn_k_heads, nv = c.gdn_v_heads, dk = c.gdn_k_dim, dv = c.gdn_v_dim;
  const std::int64_t T = q.dim(0);
  Tensor o(DType::f64, {T, nv * dv});
  for (int h = 0; h < nv; ++h) {
    const int kh = c.gdn_key_head(h);
    std::vector<double> S(std::size_t(dk * dv), 0.0), A(std::size_t(dk * dk));
    for (std::int64_t t = 0; t < T; ++t) {
      auto K = [&](int i) { return k.at(t * nk * dk + kh * dk + i); };
      const double b = beta.at(t * nv + h), e = std::exp(g.at(t * nv + h));
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dk; ++j)
          A[std::size_t(i * dk + j)] = e * ((i == j ? 1.0 : 0.0) - b * K(i) * K(j));
      std::vector<double> N(S.size(), 0.0);
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) {
          double acc = 0;
          for (int m = 0; m < dk; ++m) acc += A[std::size_t(i * dk + m)] * S[std::size_t(m * dv + j)];
          N[std::size_t(i * dv + j)] = acc + b * K(i) * v.at(t * nv * dv + h * dv + j);
        }
      S = N;
      for (int j = 0; j < dv; ++j) {
        double acc = 0;
        for (int i = 0; i < dk; ++i) acc += S[std::size_t(i * dv + j)] * q.at(t * nk * dk + kh * dk + i);
        o.data<double>()[t * nv * dv + h * dv + j] = acc;
      }
    }
  }
  return o;
}

struct Inputs {
  Tensor q, k, v, g, beta;
};
Inputs make_inputs(const ModelConfig& c, int T) {
  const int nk = c.gdn_k_heads, nv = c.gdn_v_heads, dk = c.gdn_k_dim, dv = c.gdn_v_dim;
  Inputs in;
  in.q = l2norm(test::random({T, nk * dk}, 21), dk, 1e-6, 1.0 / std::sqrt(double(dk)));
  in.k = l2norm(test::random({T, nk * dk}, 22), dk, 1e-6, 1.0);
  in.v = test::random({T, nv * dv}, 23);
  in.g =
      gdn_g(test::random({T, nv}, 24), test::vec({-0.5, -1.0, -2.0, -0.1}), test::vec({0.1, 0.2, -0.3, 0.0}));
  in.beta = gdn_beta(test::random({T, nv}, 25));
  return in;
}

class GdnRecurrence : public ::testing::TestWithParam<GdnHeadMap> {};

TEST_P(GdnRecurrence, EqualsClosedForm) {
  const ModelConfig c = gdn_config(2, 4, 5, 3, GetParam());
  const Inputs in = make_inputs(c, 7);
  std::vector<double> state;
  const Tensor o = gdn_recurrence(c, in.q, in.k, in.v, in.g, in.beta, state);
  EXPECT_LT(test::max_abs_diff(o, closed_form(c, in.q, in.k, in.v, in.g, in.beta)), 1e-13);
}

TEST_P(GdnRecurrence, TokenByTokenEqualsOneCall) {
  const ModelConfig c = gdn_config(2, 4, 5, 3, GetParam());
  const Inputs in = make_inputs(c, 6);
  std::vector<double> whole, steps;
  const Tensor o = gdn_recurrence(c, in.q, in.k, in.v, in.g, in.beta, whole);
  for (int t = 0; t < 6; ++t) {
    const Tensor ot = gdn_recurrence(c, in.q.rows(t, t + 1), in.k.rows(t, t + 1), in.v.rows(t, t + 1),
                                     in.g.rows(t, t + 1), in.beta.rows(t, t + 1), steps);
    EXPECT_EQ(test::max_abs_diff(ot, o.rows(t, t + 1)), 0.0);
  }
  EXPECT_EQ(whole, steps);
}

INSTANTIATE_TEST_SUITE_P(HeadMaps, GdnRecurrence, ::testing::Values(GdnHeadMap::grouped, GdnHeadMap::tiled),
                         [](const auto& info) { return std::string(gdn_head_map_name(info.param)); });

TEST(GdnHeads, GroupedAndTiledMaps) {
  const ModelConfig g = gdn_config(2, 6, 4, 4, GdnHeadMap::grouped);
  const ModelConfig t = gdn_config(2, 6, 4, 4, GdnHeadMap::tiled);
  const int grouped[] = {0, 0, 0, 1, 1, 1}, tiled[] = {0, 1, 0, 1, 0, 1};
  for (int h = 0; h < 6; ++h) {
    EXPECT_EQ(g.gdn_key_head(h), grouped[h]);
    EXPECT_EQ(t.gdn_key_head(h), tiled[h]);
  }
}

TEST(GdnConv, HandCheckedTaps) {
  // One channel, K = 3, taps {1, 2, 3}: tap K-1 multiplies the current token.
  Tensor state(DType::f64, {2, 1});
  const Tensor y = conv_silu(test::mat(2, 1, {1, 10}), test::mat(1, 3, {1, 2, 3}), state);
  EXPECT_DOUBLE_EQ(y.at(0), silu(3.0));
  EXPECT_DOUBLE_EQ(y.at(1), silu(2.0 + 30.0));
  EXPECT_EQ(state.at(0), 1.0);
  EXPECT_EQ(state.at(1), 10.0);
}

TEST(GdnConv, StateOfKAndKMinusOneGiveTheSameOutputs) {
  const int K = 4, C = 5, T = 7;
  const Tensor x = test::random({T, C}, 31), w = test::random({C, K}, 32);
  Tensor whole(DType::f64, {K - 1, C});
  const Tensor y = conv_silu(x, w, whole);
  for (int rows : {K - 1, K}) {
    Tensor st(DType::f64, {rows, C});
    const Tensor a = conv_silu(x.rows(0, 3), w, st);
    EXPECT_EQ(st.dim(0), rows);
    EXPECT_EQ(test::max_abs_diff(a, y.rows(0, 3)), 0.0);
    for (int t = 3; t < T; ++t)
      EXPECT_EQ(test::max_abs_diff(conv_silu(x.rows(t, t + 1), w, st), y.rows(t, t + 1)), 0.0);
  }
}

TEST(GdnGates, BetaAndG) {
  const Tensor beta = gdn_beta(test::mat(1, 2, {0.0, 2.0}));
  EXPECT_DOUBLE_EQ(beta.at(0), 0.5);
  EXPECT_DOUBLE_EQ(beta.at(1), 1.0 / (1.0 + std::exp(-2.0)));
  // g = -exp(A_log) * softplus(a + dt_bias); softplus(0) = log 2.
  const Tensor g = gdn_g(test::mat(1, 1, {0.25}), test::vec({-2.0}), test::vec({-0.25}));
  EXPECT_DOUBLE_EQ(g.at(0), -2.0 * std::log(2.0));
}

TEST(GdnNorm, L2AndGatedRmsNorm) {
  const Tensor l = l2norm(test::mat(1, 2, {3, 4}), 2, 0.0, 2.0);
  EXPECT_DOUBLE_EQ(l.at(0), 1.2);
  EXPECT_DOUBLE_EQ(l.at(1), 1.6);
  const Tensor y = gated_rmsnorm(test::mat(1, 2, {3, 4}), test::mat(1, 2, {0, 1}), test::vec({1, 2}), 0.0, 2);
  EXPECT_DOUBLE_EQ(y.at(0), 0.848528137423857 * silu(0.0));
  EXPECT_DOUBLE_EQ(y.at(1), 2.262741699796952 * silu(1.0));
}

}  // namespace
}  // namespace ds::ref
