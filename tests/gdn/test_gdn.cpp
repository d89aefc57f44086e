// Gated DeltaNet kernels (kernels/gdn.cu, kernels/ssm_conv.cu) through the SIMT runtime:
//  - the plain GDN recurrence and plain SSM conv against a double-precision computation of
//    reference-math.md §3.6 / §4 (the GDN state also against the closed form);
//  - the fused decode ops A/B (GDN in place, + ids) and C/D (conv update, + ids) BIT FOR BIT
//    equal to get_rows + plain op + copy-back, on every step of a multi-step decode of
//    several sequences, for identity, permuted and remapped-to-a-fresh-zeroed-slot ids maps;
//  - all of it bitwise identical under every SIMT thread order and host thread count;
//  - each GDN kernel mutant (kernels/mutants/gdn_*.patch, gdn_ids_ignored.cu) caught by the same check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels.h"
#include "mutants/mutants.h"
#include "simt/simt.h"

namespace {

// The table under test: the SIMT build, or the nvcc build when a GPU test switches to it.
const dsk::KernelTable* g_table = &dsk_simt::table();
const dsk::KernelTable& K() { return *g_table; }
using F = std::vector<float>;

// A device f32 (or i32) buffer.
template <class T>
struct Dev {
  T* p = nullptr;
  std::size_t n = 0;
  explicit Dev(std::size_t count) : p(static_cast<T*>(K().alloc(count * sizeof(T)))), n(count) {}
  explicit Dev(const std::vector<T>& v) : Dev(v.size()) { K().to_device(p, v.data(), n * sizeof(T)); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { K().release(p); }
  std::vector<T> get() const {
    std::vector<T> v(n);
    K().to_host(v.data(), p, n * sizeof(T));
    return v;
  }
  void set(const std::vector<T>& v) const { K().to_device(p, v.data(), n * sizeof(T)); }
};

F normal(std::size_t n, float std, std::mt19937& gen) {
  std::normal_distribution<float> d(0.0f, std);
  F v(n);
  for (auto& x : v) x = d(gen);
  return v;
}
F uniform(std::size_t n, float lo, float hi, std::mt19937& gen) {
  std::uniform_real_distribution<float> d(lo, hi);
  F v(n);
  for (auto& x : v) x = d(gen);
  return v;
}
// Rows of `width` l2-normalised (times scale), as the q_l2 / k_l2 stages.
F l2rows(F v, int width, float scale) {
  for (std::size_t r = 0; r < v.size() / std::size_t(width); ++r) {
    double ss = 0;
    for (int i = 0; i < width; ++i) ss += double(v[r * width + i]) * v[r * width + i];
    for (int i = 0; i < width; ++i) v[r * width + i] = float(v[r * width + i] / std::sqrt(ss + 1e-6) * scale);
  }
  return v;
}
bool same_bits(const F& a, const F& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Dims {
  int nk = 2, nv = 4, dk = 16, dv = 24;
  std::size_t slot() const { return std::size_t(nv) * dk * dv; }
};

// One token (or T tokens) of GDN inputs for n_seqs sequences.
struct GdnIn {
  F q, k, v, g, beta;
  GdnIn(const Dims& d, int n_seqs, int T, std::mt19937& gen) {
    const std::size_t rows = std::size_t(n_seqs) * T;
    q = l2rows(normal(rows * d.nk * d.dk, 1, gen), d.dk, 1.0f / std::sqrt(float(d.dk)));
    k = l2rows(normal(rows * d.nk * d.dk, 1, gen), d.dk, 1.0f);
    v = normal(rows * d.nv * d.dv, 1, gen);
    g = uniform(rows * d.nv, -1.0f, -0.01f, gen);
    beta = uniform(rows * d.nv, 0.05f, 0.95f, gen);
  }
};

// ---------------------------------------------------------------- plain ops vs double

// reference-math.md §3.6 in double, HF [dk, dv] state per (seq, head); returns outputs,
// updates S. kh(h) = floor(h / rho).
std::vector<double> gdn_double(const Dims& d, int n_seqs, int T, const GdnIn& in, std::vector<double>& S,
                               bool closed_form) {
  std::vector<double> out(std::size_t(n_seqs) * T * d.nv * d.dv);
  const int rho = d.nv / d.nk;
  for (int s = 0; s < n_seqs; ++s)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < d.nv; ++h) {
        const std::size_t row = std::size_t(s) * T + t;
        const float* q = &in.q[(row * d.nk + h / rho) * d.dk];
        const float* k = &in.k[(row * d.nk + h / rho) * d.dk];
        const float* v = &in.v[(row * d.nv + h) * d.dv];
        const double decay = std::exp(double(in.g[row * d.nv + h])), b = in.beta[row * d.nv + h];
        double* M = &S[(std::size_t(s) * d.nv + h) * d.dk * d.dv];
        if (closed_form) {                                 // S_t = e^g (I - b k k^T) S_{t-1} + b k v^T
          std::vector<double> kS(std::size_t(d.dv), 0.0);  // k^T S
          for (int i = 0; i < d.dk; ++i)
            for (int j = 0; j < d.dv; ++j) kS[j] += k[i] * M[i * d.dv + j];
          for (int i = 0; i < d.dk; ++i)
            for (int j = 0; j < d.dv; ++j)
              M[i * d.dv + j] = decay * (M[i * d.dv + j] - b * k[i] * kS[j]) + b * k[i] * v[j];
        } else {
          for (int e = 0; e < d.dk * d.dv; ++e) M[e] *= decay;
          for (int j = 0; j < d.dv; ++j) {
            double m = 0;
            for (int i = 0; i < d.dk; ++i) m += M[i * d.dv + j] * k[i];
            const double delta = b * (v[j] - m);
            for (int i = 0; i < d.dk; ++i) M[i * d.dv + j] += k[i] * delta;
          }
        }
        for (int j = 0; j < d.dv; ++j) {
          double o = 0;
          for (int i = 0; i < d.dk; ++i) o += M[i * d.dv + j] * q[i];
          out[(row * d.nv + h) * d.dv + j] = o;
        }
      }
  return out;
}

double max_abs_diff(const F& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

TEST(Gdn, PlainMatchesDoubleRecurrenceAndClosedForm) {
  std::mt19937 gen(7);
  const int n_seqs = 3, T = 6;
  for (Dims d : {Dims{2, 4, 16, 24}, Dims{1, 1, 32, 32}, Dims{4, 4, 8, 40}}) {
    const GdnIn in(d, n_seqs, T, gen);
    const F s0 = normal(n_seqs * d.slot(), 0.3f, gen);
    Dev<float> q(in.q), k(in.k), v(in.v), g(in.g), beta(in.beta), si(s0), so(s0.size()),
        out(std::size_t(n_seqs) * T * d.nv * d.dv);
    K().gdn(q.p, k.p, v.p, g.p, beta.p, si.p, so.p, out.p, n_seqs, T, d.nk, d.nv, d.dk, d.dv);
    std::vector<double> S(s0.begin(), s0.end()), Sc = S;
    const auto o_ref = gdn_double(d, n_seqs, T, in, S, false);
    const auto o_cf = gdn_double(d, n_seqs, T, in, Sc, true);
    EXPECT_LT(max_abs_diff(out.get(), o_ref), 2e-5) << d.dk << "x" << d.dv;
    EXPECT_LT(max_abs_diff(so.get(), S), 2e-5);
    EXPECT_LT(max_abs_diff(out.get(), o_cf), 2e-5) << "closed form";
    EXPECT_LT(max_abs_diff(so.get(), Sc), 2e-5) << "closed form";
    EXPECT_TRUE(same_bits(si.get(), s0)) << "plain GDN must not touch its input state";
  }
}

TEST(Gdn, PlainConvMatchesDouble) {
  std::mt19937 gen(11);
  const int n_seqs = 2, T = 3, C = 37, Kw = 4;
  const F sx = normal(std::size_t(n_seqs) * C * (Kw - 1 + T), 1, gen),
          w = normal(std::size_t(C) * Kw, 0.5f, gen);
  for (bool silu : {false, true}) {
    Dev<float> dsx(sx), dw(w), y(std::size_t(n_seqs) * T * C);
    K().ssm_conv(dsx.p, dw.p, y.p, n_seqs, T, C, Kw, silu);
    const F got = y.get();
    double worst = 0;
    for (int s = 0; s < n_seqs; ++s)
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < C; ++c) {
          double acc = 0;  // reference-math §3.2: tap K-1 multiplies the current token
          for (int i = 0; i < Kw; ++i)
            acc += double(w[c * Kw + i]) * sx[(std::size_t(s) * C + c) * (Kw - 1 + T) + t + i];
          if (silu) acc = acc / (1 + std::exp(-acc));
          worst = std::max(worst, std::abs(acc - got[(std::size_t(s) * T + t) * C + c]));
        }
    EXPECT_LT(worst, 1e-5) << "silu " << silu;
  }
}

// ---------------------------------------------------------------- fused == plain, bit for bit

enum class IdsMap { identity, permuted, fresh };
const char* name(IdsMap m) {
  return m == IdsMap::identity ? "identity" : m == IdsMap::permuted ? "permuted" : "fresh";
}
void PrintTo(IdsMap m, std::ostream* os) { *os << name(m); }

constexpr int kSeqs = 3, kSlots = 6, kHead = 1, kSteps = 6, kFresh = 5;  // destinations: slots 1..3

// Source slot of each sequence at a step: identity; a rotation of the destination slots
// (a reorder) with sequence 2 reading stale slot 0 on odd steps; or identity except that
// sequence 1 restarts from the zeroed slot 5 at step 2 (rs_zero remap).
std::vector<std::int32_t> ids_for(IdsMap m, int step) {
  std::vector<std::int32_t> ids(kSeqs);
  for (int s = 0; s < kSeqs; ++s) ids[s] = kHead + s;
  if (m == IdsMap::permuted) {
    for (int s = 0; s < kSeqs; ++s) ids[s] = kHead + (s + step + 1) % kSeqs;
    if (step % 2 == 1) ids[2] = 0;
  }
  if (m == IdsMap::fresh && step == 2) ids[1] = kFresh;
  return ids;
}

// Everything a decode produces: every step's outputs and the final caches.
struct Trace {
  std::vector<F> outs;
  F cache;
  bool operator==(const Trace& o) const {
    if (outs.size() != o.outs.size() || !same_bits(cache, o.cache)) return false;
    for (std::size_t i = 0; i < outs.size(); ++i)
      if (!same_bits(outs[i], o.outs[i])) return false;
    return true;
  }
};

F initial_cache(std::size_t slot) {
  std::mt19937 gen(99);
  F c = normal(kSlots * slot, 0.3f, gen);
  std::fill(c.begin() + kFresh * std::ptrdiff_t(slot), c.end(), 0.0f);  // the fresh slot is zeroed
  return c;
}

// GDN decode. variant 0: get_rows + plain + copy-back; 1: get_rows into the destination + A; 2: B.
Trace gdn_decode(int variant, IdsMap m, const dsk::KernelTable& kt = K()) {
  const Dims d;
  const std::size_t slot = d.slot();
  std::mt19937 gen(5);
  Dev<float> cache(initial_cache(slot)), tmp(kSeqs * slot), tmp2(kSeqs * slot), scratch(kSeqs * slot),
      out(std::size_t(kSeqs) * d.nv * d.dv);
  Trace tr;
  for (int step = 0; step < kSteps; ++step) {
    const GdnIn in(d, kSeqs, 1, gen);
    const auto ids = ids_for(m, step);
    Dev<float> q(in.q), k(in.k), v(in.v), g(in.g), beta(in.beta);
    Dev<std::int32_t> dids(ids);
    auto get_rows = [&](float* dst) {
      for (int s = 0; s < kSeqs; ++s)
        K().device_copy(dst + s * slot, cache.p + ids[s] * slot, slot * sizeof(float));
    };
    if (variant == 0) {
      get_rows(tmp.p);
      kt.gdn(q.p, k.p, v.p, g.p, beta.p, tmp.p, tmp2.p, out.p, kSeqs, 1, d.nk, d.nv, d.dk, d.dv);
      K().device_copy(cache.p + kHead * slot, tmp2.p, kSeqs * slot * sizeof(float));
    } else if (variant == 1) {
      get_rows(tmp.p);
      K().device_copy(cache.p + kHead * slot, tmp.p, kSeqs * slot * sizeof(float));
      kt.gdn_inplace(q.p, k.p, v.p, g.p, beta.p, cache.p + kHead * slot, out.p, kSeqs, d.nk, d.nv, d.dk,
                     d.dv);
    } else {
      kt.gdn_inplace_ids(q.p, k.p, v.p, g.p, beta.p, cache.p, dids.p, kHead, scratch.p, out.p, kSeqs, d.nk,
                         d.nv, d.dk, d.dv);
    }
    tr.outs.push_back(out.get());
  }
  tr.cache = cache.get();
  return tr;
}

// Conv decode. variant 0: get_rows + window concat + plain conv + ring copy; 1: get_rows + C; 2: D.
constexpr int kC = 45, kK = 4;
Trace conv_decode(int variant, IdsMap m, const dsk::KernelTable& kt = K()) {
  const std::size_t slot = std::size_t(kC) * (kK - 1);
  std::mt19937 gen(6);
  const F w = normal(std::size_t(kC) * kK, 0.5f, gen);
  Dev<float> dw(w), cache(initial_cache(slot)), tmp(kSeqs * slot), scratch(kSeqs * slot),
      y(std::size_t(kSeqs) * kC);
  Trace tr;
  for (int step = 0; step < kSteps; ++step) {
    const F x = normal(std::size_t(kSeqs) * kC, 1, gen);
    const auto ids = ids_for(m, step);
    Dev<float> dx(x);
    Dev<std::int32_t> dids(ids);
    if (variant == 0) {
      // The unfused chain on the host (value-preserving copies): window = [taps | x].
      const F c = cache.get();
      F sx(std::size_t(kSeqs) * kC * kK), ring = c;
      for (int s = 0; s < kSeqs; ++s)
        for (int ch = 0; ch < kC; ++ch) {
          float* win = &sx[(std::size_t(s) * kC + ch) * kK];
          for (int i = 0; i < kK - 1; ++i) win[i] = c[ids[s] * slot + std::size_t(ch) * (kK - 1) + i];
          win[kK - 1] = x[std::size_t(s) * kC + ch];
          for (int i = 0; i < kK - 1; ++i)
            ring[(kHead + s) * slot + std::size_t(ch) * (kK - 1) + i] = win[i + 1];
        }
      Dev<float> dsx(sx);
      kt.ssm_conv(dsx.p, dw.p, y.p, kSeqs, 1, kC, kK, true);
      cache.set(ring);
    } else if (variant == 1) {
      for (int s = 0; s < kSeqs; ++s)
        K().device_copy(tmp.p + s * slot, cache.p + ids[s] * slot, slot * sizeof(float));
      kt.ssm_conv_update(tmp.p, dw.p, dx.p, cache.p + kHead * slot, y.p, kSeqs, kC, kK, true);
    } else {
      kt.ssm_conv_update_ids(cache.p, dids.p, kHead, scratch.p, dw.p, dx.p, y.p, kSeqs, kC, kK, true);
    }
    tr.outs.push_back(y.get());
  }
  tr.cache = cache.get();
  return tr;
}

// The first step whose output differs, or kSteps when only the final cache differs, or -1.
int first_diff(const Trace& a, const Trace& b) {
  for (std::size_t i = 0; i < a.outs.size(); ++i)
    if (!same_bits(a.outs[i], b.outs[i])) return int(i);
  return same_bits(a.cache, b.cache) ? -1 : kSteps;
}

class Fused : public ::testing::TestWithParam<IdsMap> {};

TEST_P(Fused, GdnInplaceAndIdsEqualPlainBitForBit) {
  const Trace plain = gdn_decode(0, GetParam());
  EXPECT_EQ(first_diff(plain, gdn_decode(1, GetParam())), -1) << "op A";
  EXPECT_EQ(first_diff(plain, gdn_decode(2, GetParam())), -1) << "op B";
}

TEST_P(Fused, ConvUpdateAndIdsEqualPlainBitForBit) {
  const Trace plain = conv_decode(0, GetParam());
  EXPECT_EQ(first_diff(plain, conv_decode(1, GetParam())), -1) << "op C";
  EXPECT_EQ(first_diff(plain, conv_decode(2, GetParam())), -1) << "op D";
}

TEST_P(Fused, BitwiseIdenticalUnderEverySimtOrder) {
  const Trace g_ref = gdn_decode(2, GetParam()), c_ref = conv_decode(2, GetParam());
  for (simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::random})
    for (unsigned threads : {1u, 2u}) {
      simt::Config cfg;
      cfg.order = order;
      cfg.seed = 1234;
      cfg.host_threads = threads;
      simt::ScopedConfig scoped(cfg);
      for (int variant = 0; variant < 3; ++variant) {
        EXPECT_TRUE(gdn_decode(variant, GetParam()) == g_ref)
            << "gdn variant " << variant << " order " << int(order);
        EXPECT_TRUE(conv_decode(variant, GetParam()) == c_ref)
            << "conv variant " << variant << " order " << int(order);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Ids, Fused, ::testing::Values(IdsMap::identity, IdsMap::permuted, IdsMap::fresh),
                         [](const auto& info) { return std::string(name(info.param)); });

// ---------------------------------------------------------------- planted bugs are caught

struct Planted {
  const char* name;
  const char* mutant;  // kernels/mutants/<mutant>.patch or .cu
  bool conv;           // conv (else GDN) decode
  int variant;         // the op carrying the bug: 0 plain, 1 A / C, 2 B / D
  IdsMap map;          // the ids map that exposes it
  int first;           // first step whose output differs from the clean plain op
};

TEST(GdnMutants, EachPlantedBugIsCaughtAtItsFirstStep) {
  const Planted table[] = {
      // Permuted ids: step 0 already reads a slot another sequence's block writes in place.
      {"gdn-inplace-race", "gdn-inplace-race", false, 2, IdsMap::permuted, 0},
      {"gdn-ids-ignored", "gdn-ids-ignored", false, 2, IdsMap::permuted, 0},
      // The fresh-slot remap first happens at step 2.
      {"gdn-ids-ignored (fresh)", "gdn-ids-ignored", false, 2, IdsMap::fresh, 2},
      {"gdn-ids-ignored (conv D)", "gdn-ids-ignored", true, 2, IdsMap::permuted, 0},
      {"gdn-conv-taps-reversed", "gdn-conv-taps-reversed", true, 0, IdsMap::identity, 0},
      {"gdn-state-transposed", "gdn-state-transposed", false, 1, IdsMap::identity, 0},
      {"gdn-head-modulo", "gdn-head-modulo", false, 0, IdsMap::identity, 0},
  };
  for (const Planted& p : table) {
    const Trace clean = p.conv ? conv_decode(0, p.map) : gdn_decode(0, p.map);
    const dsk::KernelTable* bug = dsk_simt::mutant_table(p.mutant);
    ASSERT_NE(bug, nullptr) << p.mutant;
    const Trace bad = p.conv ? conv_decode(p.variant, p.map, *bug) : gdn_decode(p.variant, p.map, *bug);
    EXPECT_EQ(first_diff(clean, bad), p.first) << p.name;
    // The clean variant itself is exact (the bug is the only difference).
    const Trace ok = p.conv ? conv_decode(p.variant, p.map) : gdn_decode(p.variant, p.map);
    EXPECT_EQ(first_diff(clean, ok), -1) << p.name;
  }
}

#if defined(DSK_TEST_CUDA)
// Fused == plain bit for bit on a real GPU too (the nvcc build of the same sources, where the
// compiler may contract to FMA: both paths share the code, so they still agree). Skipped
// without a CUDA device.
TEST(GdnCuda, FusedEqualPlainBitForBitOnTheGpu) {
  if (!dsk_cuda::table().device_error().empty()) GTEST_SKIP() << dsk_cuda::table().device_error();
  struct Restore {
    ~Restore() { g_table = &dsk_simt::table(); }
  } restore;
  g_table = &dsk_cuda::table();
  for (IdsMap m : {IdsMap::identity, IdsMap::permuted, IdsMap::fresh}) {
    const Trace g = gdn_decode(0, m), c = conv_decode(0, m);
    EXPECT_EQ(first_diff(g, gdn_decode(1, m)), -1) << "op A " << name(m);
    EXPECT_EQ(first_diff(g, gdn_decode(2, m)), -1) << "op B " << name(m);
    EXPECT_EQ(first_diff(c, conv_decode(1, m)), -1) << "op C " << name(m);
    EXPECT_EQ(first_diff(c, conv_decode(2, m)), -1) << "op D " << name(m);
  }
}
#endif

}  // namespace
