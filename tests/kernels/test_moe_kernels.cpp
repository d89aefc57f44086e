// The mixture-of-experts kernels alone, through the SIMT runtime (kernels/moe_route.cu,
// kernels/moe_experts.cu, kernels/moe_shexp.cu): the fused routing against the reference's own rules
// (reference/ops_moe.cpp: route_experts, routing_weights) on the double logits of the same f16
// inputs, exact ties to the lower expert index; the grouped experts and their f32 combine against
// a double computation; Qwen3-Next's shared-expert gate and sum against double; bitwise identical under every
// SIMT thread order; and the MoE kernel mutants differing from them exactly where their bug bites.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "ops.h"

namespace {

using namespace kt;
using ds::MoeRouting;

struct RouteCase {
  std::string name;
  WType wt;
  int T, E, cols, k;
  MoeRouting rule;
  bool norm_topk;
  bool duplicate_rows;  // expert 2i + 1's router row a copy of 2i's: exact ties in every row
};
void PrintTo(const RouteCase& c, std::ostream* os) { *os << c.name; }
class MoeRoute : public testing::TestWithParam<RouteCase> {};

TEST_P(MoeRoute, FollowsTheReferenceRulesAndIsOrderIndependent) {
  const auto& p = GetParam();
  Weights w = make_weights(p.wt, std::size_t(p.E) * p.cols, 61);
  const std::size_t es = p.wt == WType::f32 ? 4 : 2, row = std::size_t(p.cols) * es;
  if (p.duplicate_rows)
    for (int e = 1; e < p.E; e += 2) {
      std::copy_n(w.bytes.begin() + std::ptrdiff_t((e - 1) * row), row,
                  w.bytes.begin() + std::ptrdiff_t(e * row));
      std::copy_n(w.values.begin() + std::ptrdiff_t((e - 1) * p.cols), p.cols,
                  w.values.begin() + std::ptrdiff_t(e * p.cols));
    }
  // Router logits of about unit spread, as the synthetic presets give (docs/moe.md).
  const Bits xb = to_f16(normal(std::size_t(p.T) * p.cols, 20.0 / std::sqrt(double(p.cols)), 62));
  Buf dw(w.bytes), dx(xb), logits(std::size_t(p.T) * p.E * 2), ids(std::size_t(p.T) * p.k * 4),
      weights(std::size_t(p.T) * p.k * 2);
  const dsk::MoeRule rule =
      p.rule == MoeRouting::softmax_topk ? dsk::MoeRule::softmax_topk : dsk::MoeRule::topk_softmax;
  const Bits got = same_under_every_order(
      [&] {
        K().moe_route(dw.p, p.wt, dx.p, logits.p, ids.as<std::int32_t>(), weights.p, p.T, p.E, p.cols, p.k,
                      rule, p.norm_topk);
      },
      [&] {
        Bits b = logits.bits(), i = ids.bits(), wb = weights.bits();
        b.insert(b.end(), i.begin(), i.end());
        b.insert(b.end(), wb.begin(), wb.end());
        return b;
      });
  const auto x = f16_values(xb);
  std::vector<double> ref_logits(std::size_t(p.T) * p.E);
  for (int t = 0; t < p.T; ++t)
    for (int e = 0; e < p.E; ++e) {
      double acc = 0;
      for (int c = 0; c < p.cols; ++c)
        acc += w.values[std::size_t(e) * p.cols + c] * x[std::size_t(t) * p.cols + c];
      ref_logits[std::size_t(t) * p.E + e] = acc;
    }
  expect_close(Bits(got.begin(), got.begin() + p.T * p.E), ref_logits, 1e-4, "router_logits");

  std::vector<std::int32_t> got_ids(std::size_t(p.T) * p.k);
  K().to_host(got_ids.data(), ids.p, got_ids.size() * 4);
  const Bits got_w = weights.bits();
  for (int t = 0; t < p.T; ++t) {
    const std::span<const double> lg(ref_logits.data() + std::size_t(t) * p.E, std::size_t(p.E));
    const ds::ref::ExpertChoice want = ds::ref::route_experts(lg, p.k, p.rule, p.norm_topk);
    std::vector<int> chosen(got_ids.begin() + t * p.k, got_ids.begin() + (t + 1) * p.k);
    // The kernel ranks its f32 logits: where the double ones are within f32 rounding of each other
    // it may rank the pair the other way. Every other choice, and every exact tie, is the reference's.
    for (int j = 0; j < p.k; ++j) {
      const int g = chosen[std::size_t(j)], r = want.ids[std::size_t(j)];
      ASSERT_TRUE(g >= 0 && g < p.E) << "token " << t << " slot " << j;
      if (g != r) {
        EXPECT_LT(std::abs(lg[std::size_t(g)] - lg[std::size_t(r)]), 1e-5)
            << "token " << t << " slot " << j << ": expert " << g << " for " << r;
      }
      if (p.duplicate_rows) {
        EXPECT_EQ(g, r) << "token " << t << " slot " << j << ": an exact tie";
      }
    }
    const std::vector<double> ref_w = ds::ref::routing_weights(lg, chosen, p.rule, p.norm_topk);
    expect_close(Bits(got_w.begin() + t * p.k, got_w.begin() + (t + 1) * p.k), ref_w, 1e-5, "expert_weights");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, MoeRoute,
    testing::Values(
        RouteCase{"qwen3moe_tiny_prefill", WType::f32, 8, 16, 64, 4, MoeRouting::softmax_topk, true, false},
        RouteCase{"qwen3moe_unnormed", WType::f32, 8, 16, 64, 4, MoeRouting::softmax_topk, false, false},
        RouteCase{"mixtral_tiny", WType::f32, 8, 8, 64, 2, MoeRouting::topk_softmax, false, false},
        RouteCase{"tails_odd_widths", WType::f32, 3, 7, 90, 3, MoeRouting::softmax_topk, true, false},
        RouteCase{"qwen3_30b_decode_bf16", WType::bf16, 1, 128, 2048, 8, MoeRouting::softmax_topk, true,
                  false},
        RouteCase{"wide_512_experts_top10_f16", WType::f16, 2, 512, 64, 10, MoeRouting::softmax_topk, true,
                  false},
        RouteCase{"max_top_k", WType::f32, 2, 40, 64, dsk::kMoeMaxTopK, MoeRouting::topk_softmax, false,
                  false},
        RouteCase{"exact_ties_lower_index_first_softmax", WType::f32, 4, 16, 64, 5, MoeRouting::softmax_topk,
                  true, true},
        RouteCase{"exact_ties_lower_index_first_mixtral", WType::f32, 4, 8, 64, 3, MoeRouting::topk_softmax,
                  false, true}),
    [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------

struct ExpertsCase {
  std::string name;
  WType wt;
  int T, k, E, F, D;
  bool chain_add;
};
void PrintTo(const ExpertsCase& c, std::ostream* os) { *os << c.name; }

// Ids for T tokens of k distinct experts each: expert 0 chosen by every token (over-subscribed),
// the rest spread so some experts go unused.
std::vector<std::int32_t> crowded_ids(int T, int k, int E) {
  std::vector<std::int32_t> ids;
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j) ids.push_back(j == 0 ? 0 : 1 + (t * 3 + j * 5) % (E - 1));
  for (int t = 0; t < T; ++t)  // distinct within a token: bump a repeat to the next free expert
    for (int j = 1; j < k; ++j)
      for (int i = 0; i < j; ++i)
        if (ids[std::size_t(t * k + j)] == ids[std::size_t(t * k + i)]) {
          ids[std::size_t(t * k + j)] = 1 + ids[std::size_t(t * k + j)] % (E - 1);
          i = -1;
        }
  return ids;
}

struct ExpertsRun {
  Bits out, resid;
};

ExpertsRun run_experts(const dsk::KernelTable& kt, const ExpertsCase& p, const Weights& wg, const Weights& wu,
                       const Weights& wd, const Bits& xb, const std::vector<std::int32_t>& ids,
                       const Bits& wb, const Bits& rb) {
  Buf dg(wg.bytes), du(wu.bytes), dd(wd.bytes), dx(xb), di(ids), dwt(wb), dr(rb), out(xb.size() * 2),
      scratch(dsk::moe_scratch_bytes(p.T, p.k, p.E, p.F, p.D));
  kt.moe_experts(dg.p, du.p, dd.p, p.wt, p.wt, dx.p, di.as<std::int32_t>(), dwt.p, out.p,
                 p.chain_add ? dr.p : nullptr, scratch.p, p.T, p.k, p.E, p.F, p.D);
  return {out.bits(), dr.bits()};
}

class MoeExperts : public testing::TestWithParam<ExpertsCase> {};

TEST_P(MoeExperts, MatchesDoubleAndIsOrderIndependent) {
  const auto& p = GetParam();
  const std::size_t E = std::size_t(p.E), F = std::size_t(p.F), D = std::size_t(p.D);
  const Weights wg = make_weights(p.wt, E * F * D, 71), wu = make_weights(p.wt, E * F * D, 72),
                wd = make_weights(p.wt, E * D * F, 73);
  const Bits xb = to_f16(normal(std::size_t(p.T) * D, 1.0, 74)),
             rb = to_f16(normal(std::size_t(p.T) * D, 1.0, 75));
  const std::vector<std::int32_t> ids = crowded_ids(p.T, p.k, p.E);
  std::vector<double> wv = normal(std::size_t(p.T) * p.k, 0.2, 76, 0.5);
  for (double& v : wv) v = std::abs(v);
  const Bits wb = to_f16(wv);
  ExpertsRun first;
  const Bits got = same_under_every_order([&] { first = run_experts(K(), p, wg, wu, wd, xb, ids, wb, rb); },
                                          [&] {
                                            Bits b = first.out;
                                            b.insert(b.end(), first.resid.begin(), first.resid.end());
                                            return b;
                                          });
  const auto x = f16_values(xb), w = f16_values(wb), r = f16_values(rb);
  std::vector<double> ref_out(std::size_t(p.T) * D, 0.0), ref_resid(ref_out.size());
  for (int t = 0; t < p.T; ++t) {
    for (int j = 0; j < p.k; ++j) {
      const std::size_t e = std::size_t(ids[std::size_t(t * p.k + j)]);
      std::vector<double> act(F);
      for (std::size_t f = 0; f < F; ++f) {
        double g = 0, u = 0;
        for (std::size_t c = 0; c < D; ++c) {
          g += wg.values[(e * F + f) * D + c] * x[std::size_t(t) * D + c];
          u += wu.values[(e * F + f) * D + c] * x[std::size_t(t) * D + c];
        }
        act[f] = ds::ref::silu(g) * u;
      }
      for (std::size_t d = 0; d < D; ++d) {
        double y = 0;
        for (std::size_t f = 0; f < F; ++f) y += wd.values[(e * D + d) * F + f] * act[f];
        ref_out[std::size_t(t) * D + d] += w[std::size_t(t * p.k + j)] * y;
      }
    }
    for (std::size_t d = 0; d < D; ++d)
      ref_resid[std::size_t(t) * D + d] = r[std::size_t(t) * D + d] + ref_out[std::size_t(t) * D + d];
  }
  // The activation is stored as f16 between the two GEMVs (as the reference's noise floor stores
  // it): a relative error of 2^-11 on each of F terms of the down projection.
  const double slack = 2e-3;
  expect_close(Bits(got.begin(), got.begin() + std::ptrdiff_t(ref_out.size())), ref_out, slack, "moe_out");
  if (p.chain_add)
    expect_close(Bits(got.begin() + std::ptrdiff_t(ref_out.size()), got.end()), ref_resid, slack,
                 "residual_2");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MoeExperts,
    testing::Values(ExpertsCase{"qwen3moe_tiny_prefill", WType::f32, 8, 4, 16, 32, 64, true},
                    ExpertsCase{"qwen3moe_tiny_decode", WType::f32, 1, 4, 16, 32, 64, true},
                    ExpertsCase{"mixtral_tiny_no_chain_add", WType::f32, 8, 2, 8, 64, 64, false},
                    ExpertsCase{"tails_odd_widths_bf16", WType::bf16, 5, 3, 7, 170, 90, true},
                    ExpertsCase{"more_slots_than_a_group_f16", WType::f16, 12, 2, 4, 24, 40, true},
                    // Qwen3-Next's shared expert as the candidate runs it: one expert, top-1.
                    ExpertsCase{"shared_expert_one_expert_top1_bf16", WType::bf16, 8, 1, 1, 48, 64, false}),
    [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------

struct ShexpCase {
  std::string name;
  WType wt;
  int T, D;
  bool chain_add;
};
void PrintTo(const ShexpCase& c, std::ostream* os) { *os << c.name; }
class MoeShexp : public testing::TestWithParam<ShexpCase> {};

// kernels/moe_shexp.cu: the gate sigmoid(w . x) and ffn_out = moe_out + gate * shexp_out (+ the
// residual) against double on the same f16 inputs; the gate never rounds to f16 before it scales.
TEST_P(MoeShexp, MatchesDoubleAndIsOrderIndependent) {
  const auto& p = GetParam();
  const std::size_t T = std::size_t(p.T), D = std::size_t(p.D);
  // Gate weights of std 1/sqrt(D) over inputs of std 1: logits of std about 1, both sides of 0.
  Weights wg = make_weights(p.wt, D, 81);
  const Bits xb = to_f16(normal(T * D, 20.0 / std::sqrt(double(D)), 82)), mb = to_f16(normal(T * D, 0.5, 83)),
             sb = to_f16(normal(T * D, 0.5, 84)), rb = to_f16(normal(T * D, 1.0, 85));
  Bits gate, out, resid;
  same_under_every_order(
      [&] {
        Buf dw(wg.bytes), dx(xb), dm(mb), ds(sb), dr(rb), dg(T * 2), dout(T * D * 2);
        K().moe_shexp_gate_add(dw.p, p.wt, dx.p, dm.p, ds.p, dg.p, dout.p, p.chain_add ? dr.p : nullptr, p.T,
                               p.D);
        gate = dg.bits();
        out = dout.bits();
        resid = dr.bits();
      },
      [&] {
        Bits b = gate;
        b.insert(b.end(), out.begin(), out.end());
        b.insert(b.end(), resid.begin(), resid.end());
        return b;
      });
  const auto x = f16_values(xb), m = f16_values(mb), sh = f16_values(sb), r = f16_values(rb);
  std::vector<double> ref_gate(T), ref_out(T * D), ref_resid(r);
  for (std::size_t t = 0; t < T; ++t) {
    double u = 0;
    for (std::size_t c = 0; c < D; ++c) u += wg.values[c] * x[t * D + c];
    ref_gate[t] = 1.0 / (1.0 + std::exp(-u));
    for (std::size_t d = 0; d < D; ++d) {
      ref_out[t * D + d] = m[t * D + d] + ref_gate[t] * sh[t * D + d];
      if (p.chain_add) ref_resid[t * D + d] += ref_out[t * D + d];
    }
  }
  expect_close(gate, ref_gate, 1e-6, "shexp_gate");
  expect_close(out, ref_out, 1e-6, "ffn_out");
  expect_close(resid, ref_resid, 1e-6, p.chain_add ? "residual_2" : "residual untouched");
}

INSTANTIATE_TEST_SUITE_P(Shapes, MoeShexp,
                         testing::Values(ShexpCase{"qwen3next_tiny_prefill", WType::f32, 8, 64, true},
                                         ShexpCase{"qwen3next_tiny_decode", WType::f32, 1, 64, true},
                                         ShexpCase{"odd_width_f16_no_chain_add", WType::f16, 5, 90, false},
                                         ShexpCase{"qwen3next_80b_hidden_bf16", WType::bf16, 3, 2048, true}),
                         [](const auto& info) { return info.param.name; });

// mutant:moe-shexp-gate-no-sigmoid against the production kernel on the same inputs: every gate is
// the raw logit (so it differs wherever sigmoid(u) and u round apart, which is every row here), and
// ffn_out and the residual move with it.
TEST(MoeKernelMutant, ShexpGateNoSigmoidStoresAndAppliesTheLogit) {
  const int T = 8, D = 64;
  const Weights wg = make_weights(WType::f32, D, 91);
  const Bits xb = to_f16(normal(std::size_t(T) * D, 20.0 / std::sqrt(double(D)), 92)),
             mb = to_f16(normal(std::size_t(T) * D, 0.5, 93)),
             sb = to_f16(normal(std::size_t(T) * D, 0.5, 94)),
             rb = to_f16(normal(std::size_t(T) * D, 1.0, 95));
  auto run = [&](const dsk::KernelTable& kt) {
    Buf dw(wg.bytes), dx(xb), dm(mb), ds(sb), dr(rb), dg(std::size_t(T) * 2), dout(std::size_t(T) * D * 2);
    kt.moe_shexp_gate_add(dw.p, WType::f32, dx.p, dm.p, ds.p, dg.p, dout.p, dr.p, T, D);
    return std::vector<Bits>{dg.bits(), dout.bits(), dr.bits()};
  };
  const std::vector<Bits> good = run(K()), bad = run(Mutant("moe-shexp-gate-no-sigmoid"));
  const auto x = f16_values(xb);
  for (int t = 0; t < T; ++t) {
    double u = 0;
    for (int c = 0; c < D; ++c) u += wg.values[std::size_t(c)] * x[std::size_t(t * D + c)];
    EXPECT_NE(good[0][std::size_t(t)], bad[0][std::size_t(t)]) << "token " << t;
    expect_close(Bits{bad[0][std::size_t(t)]}, {u}, 1e-6, "the mutant's gate is the logit");
  }
  EXPECT_NE(good[1], bad[1]);
  EXPECT_NE(good[2], bad[2]);
}

// ---------------------------------------------------------------------------------------

// The MoE kernel mutants (kernels/mutants/moe_*.patch) against the production kernels on the same
// inputs: each differs where its bug bites and nowhere else.
struct MutantCase {
  std::string name, mutant;
  int T;
  bool differs;
};
void PrintTo(const MutantCase& c, std::ostream* os) { *os << c.name; }
class MoeKernelMutant : public testing::TestWithParam<MutantCase> {};

TEST_P(MoeKernelMutant, DiffersExactlyWhereItsBugBites) {
  const auto& m = GetParam();
  const ExpertsCase p{m.name, WType::f32, m.T, 4, 16, 32, 64, true};
  const std::size_t E = 16, F = 32, D = 64;
  const Weights wg = make_weights(p.wt, E * F * D, 81), wu = make_weights(p.wt, E * F * D, 82),
                wd = make_weights(p.wt, E * D * F, 83);
  const Bits xb = to_f16(normal(std::size_t(p.T) * D, 1.0, 84)),
             rb = to_f16(normal(std::size_t(p.T) * D, 1.0, 85));
  const std::vector<std::int32_t> ids = crowded_ids(p.T, p.k, p.E);
  const Bits wb = to_f16(std::vector<double>(std::size_t(p.T) * p.k, 0.3));
  const ExpertsRun good = run_experts(K(), p, wg, wu, wd, xb, ids, wb, rb);
  const ExpertsRun bad = run_experts(Mutant(m.mutant), p, wg, wu, wd, xb, ids, wb, rb);
  EXPECT_EQ(good.out != bad.out, m.differs) << m.mutant;
}

INSTANTIATE_TEST_SUITE_P(
    Planted, MoeKernelMutant,
    testing::Values(
        // Expert 0 is chosen by all 8 tokens, past the capacity of ceil(32 / 16) = 2 slots.
        MutantCase{"capacity_drop_over_subscribed", "moe-capacity-drop", 8, true},
        // One token's k distinct experts never exceed a capacity of 1: nothing to drop.
        MutantCase{"capacity_drop_one_token", "moe-capacity-drop", 1, false},
        MutantCase{"half_combine", "moe-half-combine", 8, true},
        // Slot s's token read as s % T: wrong for a prefill, the same for one token (s % 1 == s / k == 0).
        MutantCase{"slots_transposed_prefill", "moe-slots-transposed", 8, true},
        MutantCase{"slots_transposed_one_token", "moe-slots-transposed", 1, false}),
    [](const auto& info) { return info.param.name; });

}  // namespace
