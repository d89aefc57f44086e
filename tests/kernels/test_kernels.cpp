// Each kernel of kernels/*.cu alone, through the SIMT runtime, against a double-precision
// computation from the same (f16-rounded) inputs, on several shapes including ragged ones;
// and bitwise identical outputs under every SIMT thread order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace {

using namespace kt;

// ---------------------------------------------------------------------------------------

struct NormShape {
  int rows, width;
  float w_offset;  // 1: Qwen3-Next's (1 + w) form, its weight near 0
};
void PrintTo(const NormShape& c, std::ostream* os) { *os << c.rows << "x" << c.width; }
class RmsNorm : public testing::TestWithParam<NormShape> {};
TEST_P(RmsNorm, MatchesDoubleAndIsOrderIndependent) {
  const auto [rows, width, w_offset] = GetParam();
  const Bits xb = to_f16(normal(std::size_t(rows) * width, 1.0, 1));
  const auto x = f16_values(xb);
  const auto w = normal(std::size_t(width), 0.05, 2, 1.0 - w_offset);
  Buf dx(xb), dw(to_f32(w)), dy(xb.size() * 2);
  const Bits got =
      same_under_every_order([&] { K().rmsnorm(dx.p, dw.as<float>(), w_offset, dy.p, rows, width, 1e-6f); },
                             [&] { return dy.bits(); });
  std::vector<double> ref(x.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int c = 0; c < width; ++c) ss += x[std::size_t(r * width + c)] * x[std::size_t(r * width + c)];
    const double inv = 1.0 / std::sqrt(ss / width + 1e-6);
    for (int c = 0; c < width; ++c)
      ref[std::size_t(r * width + c)] =
          x[std::size_t(r * width + c)] * inv * (w_offset + double(float(w[std::size_t(c)])));
  }
  expect_close(got, ref, 1e-6, "rmsnorm");
}
INSTANTIATE_TEST_SUITE_P(Shapes, RmsNorm,
                         testing::Values(NormShape{1, 64, 0}, NormShape{3, 896, 0}, NormShape{2, 100, 0},
                                         NormShape{5, 33, 0}, NormShape{1, 1000, 0}, NormShape{3, 64, 1},
                                         NormShape{2, 100, 1}));

// ---------------------------------------------------------------------------------------

struct GemvCase {
  WType wt;
  int T, rows, cols;
  bool bias, chain_add;
  int pad;  // weight buffer starts `pad` elements after a 16-byte boundary (scalar head)
};
const char* wt_name(WType wt) { return wt == WType::f32 ? "f32" : wt == WType::f16 ? "f16" : "bf16"; }
void PrintTo(const GemvCase& c, std::ostream* os) {
  *os << wt_name(c.wt) << " T" << c.T << " " << c.rows << "x" << c.cols << (c.bias ? " bias" : "")
      << (c.chain_add ? " chain-add" : "") << (c.pad ? " pad" + std::to_string(c.pad) : "");
}
class Gemv : public testing::TestWithParam<GemvCase> {};
TEST_P(Gemv, MatchesDoubleAndIsOrderIndependent) {
  const auto p = GetParam();
  const Weights w = make_weights(p.wt, std::size_t(p.rows) * p.cols, 3, std::size_t(p.pad));
  const Bits xb = to_f16(normal(std::size_t(p.T) * p.cols, 1.0, 4));
  const auto x = f16_values(xb);
  const auto bias = normal(std::size_t(p.rows), 0.1, 5);
  const Bits rb = to_f16(normal(std::size_t(p.T) * p.rows, 1.0, 6));
  Buf dw(w.bytes), dx(xb), db(to_f32(bias)), dy(std::size_t(p.T) * p.rows * 2), dr(rb);
  const std::size_t es = p.wt == WType::f32 ? 4 : 2;
  const void* W = static_cast<const char*>(dw.p) + std::size_t(p.pad) * es;
  const Bits got = same_under_every_order(
      [&] {
        K().to_device(dr.p, rb.data(), dr.n);  // the chain-add updates resid in place
        K().gemv(W, p.wt, dx.p, p.bias ? db.as<float>() : nullptr, dy.p, p.chain_add ? dr.p : nullptr, p.T,
                 p.rows, p.cols);
      },
      [&] {
        Bits y = dy.bits(), r = dr.bits();
        y.insert(y.end(), r.begin(), r.end());
        return y;
      });
  std::vector<double> ref, ref_r;
  for (int t = 0; t < p.T; ++t)
    for (int r = 0; r < p.rows; ++r) {
      double acc = p.bias ? double(float(bias[std::size_t(r)])) : 0.0;
      for (int c = 0; c < p.cols; ++c)
        acc += w.values[std::size_t(r) * p.cols + c] * x[std::size_t(t) * p.cols + c];
      ref.push_back(acc);
      ref_r.push_back(ds::f16_to_f32(rb[std::size_t(t) * p.rows + r]) + (p.chain_add ? acc : 0.0));
    }
  const std::size_t n = ref.size();
  expect_close(Bits(got.begin(), got.begin() + std::ptrdiff_t(n)), ref, 1e-5, "gemv y");
  expect_close(Bits(got.begin() + std::ptrdiff_t(n), got.end()), ref_r, 1e-5, "gemv residual");
}
INSTANTIATE_TEST_SUITE_P(Shapes, Gemv,
                         testing::Values(GemvCase{WType::f32, 1, 64, 64, false, false, 0},
                                         GemvCase{WType::f16, 3, 37, 100, true, false, 0},
                                         GemvCase{WType::bf16, 2, 130, 896, true, true, 0},
                                         GemvCase{WType::f16, 1, 9, 7, false, true, 0},
                                         GemvCase{WType::f16, 2, 17, 45, true, false, 3},
                                         GemvCase{WType::f32, 2, 24, 131, false, true, 1},
                                         GemvCase{WType::bf16, 1, 8, 300, false, false, 5},
                                         // Token groups (gemv_tokens): 8 + 3 tokens; at width 4864
                                         // two per block, the last alone; 5 tokens, one group.
                                         GemvCase{WType::bf16, 11, 37, 896, true, true, 0},
                                         GemvCase{WType::f16, 9, 20, 4864, false, true, 0},
                                         GemvCase{WType::f32, 5, 13, 300, true, false, 0}));

// ---------------------------------------------------------------------------------------

struct QkvCase {
  WType wt;
  int T, q_rows, kv_rows, cols;
  bool packed, bias;
};
void PrintTo(const QkvCase& c, std::ostream* os) {
  *os << wt_name(c.wt) << " T" << c.T << " q" << c.q_rows << " kv" << c.kv_rows << " cols" << c.cols
      << (c.packed ? " packed" : "") << (c.bias ? " bias" : "");
}
class FusedQkv : public testing::TestWithParam<QkvCase> {};
TEST_P(FusedQkv, MatchesDoubleAndIsOrderIndependent) {
  const auto p = GetParam();
  const int rows = p.q_rows + 2 * p.kv_rows;
  const Weights w = make_weights(p.wt, std::size_t(rows) * p.cols, 8);
  const std::size_t es = p.wt == WType::f32 ? 4 : 2;
  const Bits xb = to_f16(normal(std::size_t(p.T) * p.cols, 1.0, 9));
  const auto x = f16_values(xb);
  const auto bias = normal(std::size_t(rows), 0.5, 10);
  Buf dx(xb), db(to_f32(bias));
  // Packed: one buffer; separate: three allocations.
  const std::size_t qb = std::size_t(p.q_rows) * p.cols * es, kb = std::size_t(p.kv_rows) * p.cols * es;
  Buf all(w.bytes), wq(qb), wk(kb), wv(kb);
  K().to_device(wq.p, w.bytes.data(), qb);
  K().to_device(wk.p, w.bytes.data() + qb, kb);
  K().to_device(wv.p, w.bytes.data() + qb + kb, kb);
  const void* Wq = p.packed ? all.p : wq.p;
  const void* Wk = p.packed ? static_cast<const char*>(all.p) + qb : wk.p;
  const void* Wv = p.packed ? static_cast<const char*>(all.p) + qb + kb : wv.p;
  const float* bq = p.bias ? db.as<float>() : nullptr;
  const float* bk = p.bias ? db.as<float>() + p.q_rows : nullptr;
  const float* bv = p.bias ? db.as<float>() + p.q_rows + p.kv_rows : nullptr;
  Buf q(std::size_t(p.T) * p.q_rows * 2), k(std::size_t(p.T) * p.kv_rows * 2),
      v(std::size_t(p.T) * p.kv_rows * 2);
  const Bits got = same_under_every_order(
      [&] {
        K().fused_qkv(Wq, Wk, Wv, p.wt, bq, bk, bv, dx.p, q.p, k.p, v.p, p.T, p.q_rows, p.kv_rows, p.cols);
      },
      [&] {
        Bits out = q.bits(), kk = k.bits(), vv = v.bits();
        out.insert(out.end(), kk.begin(), kk.end());
        out.insert(out.end(), vv.begin(), vv.end());
        return out;
      });
  std::vector<double> ref;
  auto seg = [&](int first_row, int n) {
    for (int t = 0; t < p.T; ++t)
      for (int r = first_row; r < first_row + n; ++r) {
        double acc = p.bias ? double(float(bias[std::size_t(r)])) : 0.0;
        for (int c = 0; c < p.cols; ++c)
          acc += w.values[std::size_t(r) * p.cols + c] * x[std::size_t(t) * p.cols + c];
        ref.push_back(acc);
      }
  };
  seg(0, p.q_rows);
  seg(p.q_rows, p.kv_rows);
  seg(p.q_rows + p.kv_rows, p.kv_rows);
  expect_close(got, ref, 1e-5, "fused_qkv");
}
INSTANTIATE_TEST_SUITE_P(Shapes, FusedQkv,
                         testing::Values(QkvCase{WType::f32, 3, 64, 32, 64, true, true},
                                         QkvCase{WType::f16, 2, 56, 8, 100, false, true},
                                         QkvCase{WType::bf16, 1, 40, 24, 37, true, false},
                                         QkvCase{WType::f16, 2, 64, 16, 896, true, true},
                                         // 8 + 2 tokens; 4 tokens, two rows per warp.
                                         QkvCase{WType::bf16, 10, 40, 8, 896, true, true},
                                         QkvCase{WType::f16, 4, 24, 8, 200, false, false}));

// The planted half-before-bias bug is a rounding effect: bit-identical to the correct kernel
// on most elements, off by at most half an ULP of the accumulator plus one of the result.
TEST(FusedQkv, HalfBeforeBiasMutantIsARoundingEffectButOftenOff) {
  const int T = 4, Q = 64, KV = 32, C = 64;
  const Weights w = make_weights(WType::f32, std::size_t(Q + 2 * KV) * C, 11);
  const Bits xb = to_f16(normal(std::size_t(T) * C, 1.0, 12));
  const auto bias = normal(std::size_t(Q + 2 * KV), 0.5, 13);
  Buf dw(w.bytes), dx(xb), db(to_f32(bias)), q(std::size_t(T) * Q * 2), k(std::size_t(T) * KV * 2),
      v(std::size_t(T) * KV * 2);
  const char* W = static_cast<const char*>(dw.p);
  auto run = [&](const dsk::KernelTable& kt) {
    kt.fused_qkv(W, W + Q * C * 4, W + (Q + KV) * C * 4, WType::f32, db.as<float>(), db.as<float>() + Q,
                 db.as<float>() + Q + KV, dx.p, q.p, k.p, v.p, T, Q, KV, C);
    return q.bits();
  };
  const Bits good = run(K()), bad = run(Mutant("half-before-bias"));
  int differ = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    differ += good[i] != bad[i];
    // Half an ULP of the accumulator (|acc| < 2 here: 2^-11) plus one ULP of the result.
    EXPECT_LE(std::abs(ds::f16_to_f32(good[i]) - ds::f16_to_f32(bad[i])), 2.0 * 0x1p-11) << i;
  }
  EXPECT_GT(differ, int(good.size()) / 20);
}

// ---------------------------------------------------------------------------------------

struct HeadCase {
  int T, n_q, n_kv, hd;
};
void PrintTo(const HeadCase& c, std::ostream* os) {
  *os << "T" << c.T << " heads " << c.n_q << "/" << c.n_kv << " hd" << c.hd;
}
class QkNorm : public testing::TestWithParam<HeadCase> {};
TEST_P(QkNorm, MatchesDoubleAndIsOrderIndependent) {
  const auto [T, nq, nkv, hd] = GetParam();
  const Bits qb = to_f16(normal(std::size_t(T) * nq * hd, 0.3, 14)),
             kb = to_f16(normal(std::size_t(T) * nkv * hd, 0.3, 15));
  const auto wq = normal(std::size_t(hd), 0.05, 16, 1.0), wk = normal(std::size_t(hd), 0.05, 17, 1.0);
  Buf dq(qb), dk(kb), dwq(to_f32(wq)), dwk(to_f32(wk)), qn(qb.size() * 2), kn(kb.size() * 2);
  const Bits got = same_under_every_order(
      [&] {
        K().qk_norm(dq.p, dk.p, dwq.as<float>(), dwk.as<float>(), 0.0f, qn.p, kn.p, T, nq, nkv, hd, 1e-6f);
      },
      [&] {
        Bits a = qn.bits(), b = kn.bits();
        a.insert(a.end(), b.begin(), b.end());
        return a;
      });
  std::vector<double> ref;
  auto norm = [&](const Bits& xb, const std::vector<double>& w) {
    const auto x = f16_values(xb);
    for (std::size_t h = 0; h < x.size() / std::size_t(hd); ++h) {
      double ss = 0;
      for (int i = 0; i < hd; ++i)
        ss += x[h * std::size_t(hd) + std::size_t(i)] * x[h * std::size_t(hd) + std::size_t(i)];
      const double inv = 1.0 / std::sqrt(ss / hd + 1e-6);
      for (int i = 0; i < hd; ++i)
        ref.push_back(x[h * std::size_t(hd) + std::size_t(i)] * inv * double(float(w[std::size_t(i)])));
    }
  };
  norm(qb, wq);
  norm(kb, wk);
  expect_close(got, ref, 1e-6, "qk_norm");
}
INSTANTIATE_TEST_SUITE_P(Shapes, QkNorm,
                         testing::Values(HeadCase{3, 4, 2, 32}, HeadCase{2, 3, 1, 40}, HeadCase{1, 14, 2, 64},
                                         HeadCase{2, 2, 2, 128}));

// ---------------------------------------------------------------------------------------

struct RopeCase {
  int T, n_q, n_kv, hd, rot, pos0;
  bool neox;
  double theta;
  bool scaled = false;  // per-pair frequency factors (RoPE scaling), which matter at long positions
};
void PrintTo(const RopeCase& c, std::ostream* os) {
  *os << "T" << c.T << " heads " << c.n_q << "/" << c.n_kv << " hd" << c.hd << " rot" << c.rot << " pos"
      << c.pos0 << (c.neox ? " neox" : " normal") << " theta " << c.theta << (c.scaled ? " scaled" : "");
}
// Factors of the shape Llama-3 scaling gives: high frequencies kept, low ones slowed by up to 32.
std::vector<float> rope_factors(int rot) {
  std::vector<float> f(std::size_t(rot / 2));
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = float(std::pow(32.0, double(i) / double(f.size() - 1)));
  return f;
}
class Rope : public testing::TestWithParam<RopeCase> {};
TEST_P(Rope, MatchesDoubleAndIsOrderIndependent) {
  const auto p = GetParam();
  const Bits qb = to_f16(normal(std::size_t(p.T) * p.n_q * p.hd, 1.0, 18)),
             kb = to_f16(normal(std::size_t(p.T) * p.n_kv * p.hd, 1.0, 19));
  Buf dq(qb.size() * 2), dk(kb.size() * 2);
  const std::vector<float> factors = p.scaled ? rope_factors(p.rot) : std::vector<float>{};
  Buf df(factors.size() * sizeof(float));
  if (p.scaled) K().to_device(df.p, factors.data(), df.n);
  const Bits got = same_under_every_order(
      [&] {
        K().to_device(dq.p, qb.data(), dq.n);  // in place
        K().to_device(dk.p, kb.data(), dk.n);
        K().rope(dq.p, dk.p, p.T, p.n_q, p.n_kv, p.hd, p.rot, p.pos0, float(p.theta),
                 p.scaled ? static_cast<const float*>(df.p) : nullptr, p.neox);
      },
      [&] {
        Bits a = dq.bits(), b = dk.bits();
        a.insert(a.end(), b.begin(), b.end());
        return a;
      });
  std::vector<double> ref;
  auto rot = [&](const Bits& xb, int heads) {
    const auto x = f16_values(xb);
    std::vector<double> y = x;
    for (int t = 0; t < p.T; ++t)
      for (int h = 0; h < heads; ++h) {
        const std::size_t base = (std::size_t(t) * heads + h) * p.hd;
        for (int i = 0; i < p.rot / 2; ++i) {
          const double ang = (p.pos0 + t) * std::pow(p.theta, -2.0 * i / p.rot) /
                             (p.scaled ? double(factors[std::size_t(i)]) : 1.0);
          const int a = p.neox ? i : 2 * i, b = p.neox ? i + p.rot / 2 : 2 * i + 1;
          y[base + a] = x[base + a] * std::cos(ang) - x[base + b] * std::sin(ang);
          y[base + b] = x[base + b] * std::cos(ang) + x[base + a] * std::sin(ang);
        }
      }
    ref.insert(ref.end(), y.begin(), y.end());
  };
  rot(qb, p.n_q);
  rot(kb, p.n_kv);
  // The kernel's f32 angle p * inv_freq carries a relative error of a few f32 ulps: its absolute
  // error grows with the position.
  expect_close(got, ref, 1e-5 + 4e-7 * double(p.pos0 + p.T), "rope");
}
INSTANTIATE_TEST_SUITE_P(Shapes, Rope,
                         testing::Values(RopeCase{4, 4, 2, 16, 16, 0, true, 1e6},
                                         RopeCase{1, 4, 2, 16, 16, 9, false, 5e5},
                                         RopeCase{3, 2, 1, 32, 16, 5, true, 1e4},  // partial rotary
                                         RopeCase{2, 3, 3, 40, 24, 30, false, 1e6},
                                         RopeCase{1, 14, 2, 64, 64, 100, true, 1e6},
                                         // Long positions with and without Llama-3-style scaling.
                                         RopeCase{2, 4, 2, 64, 64, 3000, false, 5e5, true},
                                         RopeCase{2, 4, 2, 16, 16, 4093, true, 5e5, true},
                                         RopeCase{2, 4, 2, 16, 16, 4093, true, 5e5, false}));

// ---------------------------------------------------------------------------------------

struct AttnCase {
  int T, pos0, n_q, n_kv, hd;
};
void PrintTo(const AttnCase& c, std::ostream* os) {
  *os << "T" << c.T << " pos" << c.pos0 << " heads " << c.n_q << "/" << c.n_kv << " hd" << c.hd;
}
class Attention : public testing::TestWithParam<AttnCase> {};
TEST_P(Attention, MatchesDoubleAndIsOrderIndependent) {
  const auto [T, pos0, nq, nkv, hd] = GetParam();
  const int P = pos0 + T;
  const Bits qb = to_f16(normal(std::size_t(T) * nq * hd, 1.0, 20));
  const Bits kb = to_f16(normal(std::size_t(P) * nkv * hd, 1.0, 21)),
             vb = to_f16(normal(std::size_t(P) * nkv * hd, 1.0, 22));
  Buf dq(qb), dk(kb), dv(vb), out(qb.size() * 2);
  const Bits got = same_under_every_order(
      [&] { K().attention(dq.p, dk.p, dv.p, out.p, T, P, pos0, nq, nkv, hd, nq * hd, nkv * hd); },
      [&] { return out.bits(); });
  const auto q = f16_values(qb), k = f16_values(kb), v = f16_values(vb);
  std::vector<double> ref(q.size(), 0.0);
  const std::size_t kvw = std::size_t(nkv) * hd, qw = std::size_t(nq) * hd;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nq; ++h) {
      const int kh = h / (nq / nkv);
      std::vector<double> s(std::size_t(pos0 + t + 1));
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= pos0 + t; ++j) {
        double d = 0;
        for (int i = 0; i < hd; ++i)
          d += q[t * qw + std::size_t(h * hd + i)] * k[j * kvw + std::size_t(kh * hd + i)];
        s[std::size_t(j)] = d / std::sqrt(double(hd));
        mx = std::max(mx, s[std::size_t(j)]);
      }
      for (auto& e : s) sum += (e = std::exp(e - mx));
      for (int j = 0; j <= pos0 + t; ++j)
        for (int i = 0; i < hd; ++i)
          ref[t * qw + std::size_t(h * hd + i)] +=
              s[std::size_t(j)] / sum * v[j * kvw + std::size_t(kh * hd + i)];
    }
  expect_close(got, ref, 1e-5, "attention");
}
INSTANTIATE_TEST_SUITE_P(Shapes, Attention,
                         testing::Values(AttnCase{4, 0, 4, 2, 16},   // prefill
                                         AttnCase{1, 6, 4, 1, 40},   // decode, ragged head_dim
                                         AttnCase{3, 37, 2, 2, 64},  // MHA, long cache
                                         AttnCase{2, 200, 14, 2, 64}));

// ---------------------------------------------------------------------------------------

struct SwigluCase {
  int T, F;
  bool has_bias, packed;
};
void PrintTo(const SwigluCase& c, std::ostream* os) {
  *os << "T" << c.T << " F" << c.F << (c.has_bias ? " bias" : "") << (c.packed ? " packed" : "");
}
class Swiglu : public testing::TestWithParam<SwigluCase> {};
TEST_P(Swiglu, MatchesDoubleAndIsOrderIndependent) {
  const auto [T, F, has_bias, packed] = GetParam();
  const int ld = packed ? 2 * F : F;
  const Bits gb = to_f16(normal(std::size_t(T) * ld, 1.5, 23)),
             ub = to_f16(normal(std::size_t(T) * ld, 1.0, 24));
  const auto bg = normal(std::size_t(F), 0.3, 25), bu = normal(std::size_t(F), 0.3, 26);
  Buf dg(gb), du(ub), dbg(to_f32(bg)), dbu(to_f32(bu)), act(std::size_t(T) * F * 2);
  // Packed: gate and up are two halves of each row of one buffer (here: of gb).
  const void* G = dg.p;
  const void* U = packed ? static_cast<const void*>(dg.as<std::uint16_t>() + F) : du.p;
  const Bits got = same_under_every_order(
      [&] { K().swiglu(G, U, dbg.as<float>(), dbu.as<float>(), has_bias, act.p, T, F, ld); },
      [&] { return act.bits(); });
  const auto g = f16_values(gb), u = f16_values(packed ? gb : ub);
  std::vector<double> ref;
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < F; ++i) {
      double gv = g[std::size_t(t) * ld + i], uv = u[std::size_t(t) * ld + i + (packed ? F : 0)];
      if (has_bias) gv += double(float(bg[std::size_t(i)])), uv += double(float(bu[std::size_t(i)]));
      ref.push_back(gv / (1 + std::exp(-gv)) * uv);
    }
  expect_close(got, ref, 1e-6, "swiglu");
}
INSTANTIATE_TEST_SUITE_P(Shapes, Swiglu,
                         testing::Values(SwigluCase{3, 100, true, false}, SwigluCase{1, 128, false, false},
                                         SwigluCase{2, 257, true, true}, SwigluCase{4, 33, false, true}));

// ---------------------------------------------------------------------------------------

TEST(Embedding, CopiesRowsInEveryWeightTypeAndOrder) {
  for (WType wt : {WType::f32, WType::f16, WType::bf16}) {
    const int V = 50, D = 70, T = 5;
    const Weights w = make_weights(wt, std::size_t(V) * D, 27);
    const std::vector<std::int32_t> tok = {3, 0, 49, 3, 17};
    Buf dw(w.bytes), dt(tok), out(std::size_t(T) * D * 2);
    const Bits got = same_under_every_order(
        [&] { K().embedding(dw.p, wt, dt.as<std::int32_t>(), nullptr, 0, out.p, T, D); },
        [&] { return out.bits(); });
    std::vector<double> ref;
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < D; ++c) ref.push_back(w.values[std::size_t(tok[std::size_t(t)]) * D + c]);
    expect_close(got, ref, 0, "embedding");
  }
}

}  // namespace
