// The Qwen3-Next kernels alone, through the SIMT runtime: the attention output gate, the GDN
// gates (beta and the log-decay g, GEMV rows with their activation epilogues), the per-head
// L2 norm of q and k read out of the conv rows, and the gated RMSNorm. Each against a
// double-precision computation from the same f16 inputs and bitwise identical under every
// SIMT thread order. (The (1 + w) norms are rmsnorm / qk_norm with w_offset 1, in
// test_kernels.cpp; the conv and the recurrence are tests/gdn.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace {

using namespace kt;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct ElemCase {
  std::string name;
  int n;
};
void PrintTo(const ElemCase& c, std::ostream* os) { *os << c.name; }
class AttnGate : public testing::TestWithParam<ElemCase> {};

TEST_P(AttnGate, MatchesDoubleAndIsOrderIndependent) {
  const auto& p = GetParam();
  const Bits ab = to_f16(normal(std::size_t(p.n), 1.0, 51)), gb = to_f16(normal(std::size_t(p.n), 3.0, 52));
  Buf da(ab), dg(gb), dy(ab.size() * 2);
  const Bits got =
      same_under_every_order([&] { K().attn_gate(da.p, dg.p, dy.p, p.n); }, [&] { return dy.bits(); });
  const auto a = f16_values(ab), g = f16_values(gb);
  std::vector<double> ref(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) ref[i] = a[i] * sigmoid(g[i]);
  expect_close(got, ref, 1e-6, "attn_gate");
}
INSTANTIATE_TEST_SUITE_P(Shapes, AttnGate,
                         testing::Values(ElemCase{"tiny_decode", 64}, ElemCase{"tiny_prefill", 8 * 64},
                                         ElemCase{"ragged", 1001}),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------

struct GatesCase {
  std::string name;
  WType wt;
  int T, nv, cols;
};
void PrintTo(const GatesCase& c, std::ostream* os) { *os << c.name; }
class GdnGates : public testing::TestWithParam<GatesCase> {};

TEST_P(GdnGates, MatchesDoubleAndIsOrderIndependent) {
  const auto& p = GetParam();
  const Weights w = make_weights(p.wt, std::size_t(2) * p.nv * p.cols, 53);  // [W_beta | W_alpha]
  const Bits xb = to_f16(normal(std::size_t(p.T) * p.cols, 4.0, 54));        // wide: softplus on both sides
  const auto a_neg = to_f32(normal(std::size_t(p.nv), 0.5, 55, -1.0)),
             dt = to_f32(normal(std::size_t(p.nv), 1.0, 56));
  Buf dw(w.bytes), dx(xb), da(a_neg), ddt(dt), beta(std::size_t(p.T) * p.nv * 2),
      g(std::size_t(p.T) * p.nv * 2);
  const std::size_t es = p.wt == WType::f32 ? 4 : 2;
  const Bits got = same_under_every_order(
      [&] {
        K().gdn_gates(dw.p, dw.as<char>() + std::size_t(p.nv) * p.cols * es, p.wt, da.as<float>(),
                      ddt.as<float>(), dx.p, beta.p, g.p, p.T, p.nv, p.cols);
      },
      [&] {
        Bits b = beta.bits(), gg = g.bits();
        b.insert(b.end(), gg.begin(), gg.end());
        return b;
      });
  const auto x = f16_values(xb);
  std::vector<double> ref_beta, ref_g;
  for (int t = 0; t < p.T; ++t)
    for (int h = 0; h < p.nv; ++h) {
      double ub = 0, ua = 0;
      for (int c = 0; c < p.cols; ++c) {
        const double xc = x[std::size_t(t) * p.cols + c];
        ub += w.values[std::size_t(h) * p.cols + c] * xc;
        ua += w.values[std::size_t(p.nv + h) * p.cols + c] * xc;
      }
      const double u = ua + dt[std::size_t(h)];
      ref_beta.push_back(sigmoid(ub));
      ref_g.push_back(a_neg[std::size_t(h)] * (u > 20 ? u : std::log1p(std::exp(u))));
    }
  const Bits got_beta(got.begin(), got.begin() + std::ptrdiff_t(ref_beta.size()));
  const Bits got_g(got.begin() + std::ptrdiff_t(ref_beta.size()), got.end());
  expect_close(got_beta, ref_beta, 1e-5, "beta");
  expect_close(got_g, ref_g, 1e-5, "g");
}
INSTANTIATE_TEST_SUITE_P(Shapes, GdnGates,
                         testing::Values(GatesCase{"tiny_f32", WType::f32, 3, 4, 64},
                                         GatesCase{"f16_ragged_cols", WType::f16, 2, 6, 100},
                                         GatesCase{"bf16_qwen3next_80b_heads", WType::bf16, 1, 32, 256}),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------

struct HeadsCase {
  std::string name;
  int T, heads, hd;
};
void PrintTo(const HeadsCase& c, std::ostream* os) { *os << c.name; }

// x / sqrt(sum(x^2) + 1e-6) * scale over each head of `hd` in `rows` rows of `ld`, from column `first`.
std::vector<double> l2_ref(const std::vector<double>& x, int T, int ld, int first, int heads, int hd,
                           double scale) {
  std::vector<double> y;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < heads; ++h) {
      const double* e = x.data() + std::size_t(t) * ld + first + std::size_t(h) * hd;
      double ss = 0;
      for (int i = 0; i < hd; ++i) ss += e[i] * e[i];
      for (int i = 0; i < hd; ++i) y.push_back(e[i] / std::sqrt(ss + 1e-6) * scale);
    }
  return y;
}

class L2Norm : public testing::TestWithParam<HeadsCase> {};
TEST_P(L2Norm, ReadsQAndKOutOfConvRowsMatchesDoubleAndIsOrderIndependent) {
  const auto& p = GetParam();
  const int kd = p.heads * p.hd, ld = 2 * kd + 2 * kd;  // [q | k | v], v as wide as 2 kd here
  const Bits xb = to_f16(normal(std::size_t(p.T) * ld, 1.0, 57));
  Buf dx(xb), q(std::size_t(p.T) * kd * 2), k(std::size_t(p.T) * kd * 2);
  const double scale = 1.0 / std::sqrt(double(p.hd));
  const Bits got =
      same_under_every_order([&] { K().l2norm(dx.p, ld, q.p, k.p, p.T, p.heads, p.hd, float(scale)); },
                             [&] {
                               Bits b = q.bits(), kb = k.bits();
                               b.insert(b.end(), kb.begin(), kb.end());
                               return b;
                             });
  const auto x = f16_values(xb);
  std::vector<double> ref = l2_ref(x, p.T, ld, 0, p.heads, p.hd, double(float(scale)));
  const std::vector<double> rk = l2_ref(x, p.T, ld, kd, p.heads, p.hd, 1.0);
  ref.insert(ref.end(), rk.begin(), rk.end());
  expect_close(got, ref, 1e-6, "l2norm");
}
INSTANTIATE_TEST_SUITE_P(Shapes, L2Norm,
                         testing::Values(HeadsCase{"tiny_decode", 1, 2, 16},
                                         HeadsCase{"tiny_prefill", 8, 2, 16},
                                         HeadsCase{"qwen3next_80b_heads", 2, 16, 128},
                                         HeadsCase{"ragged_head_dim", 3, 3, 40}),
                         [](const auto& info) { return info.param.name; });

class GatedRmsNorm : public testing::TestWithParam<HeadsCase> {};
TEST_P(GatedRmsNorm, MatchesDoubleAndIsOrderIndependent) {
  const auto& p = GetParam();
  const std::size_t n = std::size_t(p.T) * p.heads * p.hd;
  const Bits ob = to_f16(normal(n, 0.3, 58)), zb = to_f16(normal(n, 2.0, 59));
  const auto w = to_f32(normal(std::size_t(p.hd), 0.05, 60, 1.0));
  Buf dout(ob), dz(zb), dw(w), dy(n * 2);
  const Bits got = same_under_every_order(
      [&] { K().gated_rmsnorm(dout.p, dz.p, dw.as<float>(), dy.p, p.T, p.heads, p.hd, 1e-6f); },
      [&] { return dy.bits(); });
  const auto o = f16_values(ob), z = f16_values(zb);
  std::vector<double> ref(n);
  for (std::size_t r = 0; r < n / std::size_t(p.hd); ++r) {
    const double* e = o.data() + r * std::size_t(p.hd);
    double ss = 0;
    for (int i = 0; i < p.hd; ++i) ss += e[i] * e[i];
    const double inv = 1.0 / std::sqrt(ss / p.hd + 1e-6);
    for (int i = 0; i < p.hd; ++i) {
      const double zi = z[r * std::size_t(p.hd) + std::size_t(i)];
      ref[r * std::size_t(p.hd) + std::size_t(i)] = w[std::size_t(i)] * (e[i] * inv) * zi * sigmoid(zi);
    }
  }
  expect_close(got, ref, 1e-5, "gated_rmsnorm");
}
INSTANTIATE_TEST_SUITE_P(Shapes, GatedRmsNorm,
                         testing::Values(HeadsCase{"tiny_decode", 1, 4, 16},
                                         HeadsCase{"tiny_prefill", 8, 4, 16},
                                         HeadsCase{"qwen3next_80b_heads", 1, 32, 128},
                                         HeadsCase{"ragged_head_dim", 2, 3, 40}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
