// RoPE scaling (Llama-3 frequency factors): the candidates apply the factors, which only show at
// long positions (their steps, and a whole run judged at position 2050), and the capability gate
// refuses a candidate that cannot.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "../../reference/ops.h"  // the oracle's rope (harness/api/ops.h shares the name)
#include "contracts.h"
#include "reference.h"
#include "registry.h"
#include "runner.h"
#include "stage_catalog.h"

namespace ds {
namespace {

Tensor random_rows(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(std::size_t(rows * cols));
  for (double& x : v) x = dist(rng);
  return Tensor::from_f64({rows, cols}, v, DType::f16);
}

struct ScalingCase {
  const char* candidate;
  int pos0;
};
void PrintTo(const ScalingCase& c, std::ostream* os) { *os << c.candidate << " at " << c.pos0; }

class RopeScaling : public testing::TestWithParam<ScalingCase> {};

// The candidate's own RoPE steps at a late position, against the oracle's rope with the factors.
TEST_P(RopeScaling, CandidateMatchesTheOracleAtLongPositions) {
  const Model model = load_model_spec("synthetic:llama3-tiny", 0, 1);
  const ModelConfig& cfg = model.config;
  ASSERT_FALSE(cfg.rope_freq_factors.empty());
  CandidatePtr cand = make_candidate(GetParam().candidate);
  cand->load(cfg, model.weights);
  const int T = 3, pos0 = GetParam().pos0;
  TensorMap produced{{"q", random_rows(T, cfg.n_heads * cfg.head_dim, 1)},
                     {"k", random_rows(T, cfg.n_kv_heads * cfg.head_dim, 2)}};
  const StepContext ctx{&cfg, 1, 0, pos0, T};
  for (const KernelStep& step : cand->plan(cfg, BlockKind::decoder)) {
    const bool rope_step =
        std::find(step.outputs.begin(), step.outputs.end(), "q_rope") != step.outputs.end() ||
        std::find(step.outputs.begin(), step.outputs.end(), "k_rope") != step.outputs.end();
    if (!rope_step) continue;
    TensorMap in, out;
    for (const std::string& name : step.inputs) in[name] = produced.at(name);
    cand->run(step, ctx, in, out);
    for (auto& [name, t] : out) produced[name] = t;
  }
  for (const char* stage : {"q_rope", "k_rope"}) {
    const Tensor& got = produced.at(stage);
    const Tensor want =
        ref::rope(produced.at(stage[0] == 'q' ? "q" : "k").to(DType::f64), cfg.head_dim, cfg.rotary_dim(),
                  pos0, cfg.rope_theta, cfg.rope_mode, cfg.rope_freq_factors);
    ASSERT_EQ(got.shape(), want.shape()) << stage;
    double worst = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i) worst = std::max(worst, std::abs(got.at(i) - want.at(i)));
    // f16 outputs of |x| up to ~4, plus the f32 angle's error at this position; without the factors
    // the low-frequency pairs are off by O(1).
    EXPECT_LT(worst, 5e-3) << stage << " at position " << pos0;
  }
}

INSTANTIATE_TEST_SUITE_P(Candidates, RopeScaling,
                         testing::Values(ScalingCase{"simt", 3000}, ScalingCase{"simt", 6000},
                                         ScalingCase{"cpu-f16", 3000}),
                         [](const auto& info) {
                           std::string n = fmt::format("{}_at_{}", info.param.candidate, info.param.pos0);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// A candidate without RoPEFreqFactors is refused for a scaled model, naming the op, and accepted
// for the same model without scaling.
class NoScaling final : public Candidate {
 public:
  std::string name() const override { return "no-scaling"; }
  std::string description() const override { return "simt's ops without RoPE scaling"; }
  DType storage_dtype() const override { return DType::f16; }
  OpSet capabilities() const override {
    return make_candidate("simt")->capabilities().minus({Op::RoPEFreqFactors});
  }
  std::vector<KernelStep> plan(const ModelConfig&, BlockKind) const override { return {}; }
  void load(const ModelConfig&, const WeightStore&) override {}
  void run(const KernelStep&, const StepContext&, const TensorMap&, TensorMap&) override {}
};

TEST(RopeScalingGate, RefusedByNameWithoutTheOp) {
  const ModelConfig scaled = load_config_spec("synthetic:llama3-tiny", 0);
  EXPECT_TRUE(ref::required_ops(scaled).has(Op::RoPEFreqFactors));
  const auto refusal = capability_refusal(scaled, NoScaling{});
  ASSERT_TRUE(refusal.has_value());
  EXPECT_NE(refusal->find("RoPEFreqFactors"), std::string::npos) << *refusal;
  EXPECT_FALSE(capability_refusal(load_config_spec("synthetic:llama-tiny", 0), NoScaling{}).has_value());
  EXPECT_FALSE(capability_refusal(scaled, *make_candidate("simt")).has_value());
}

// The run itself at a late position: a 2050-token prompt on one layer, the candidate judged on the
// decode step at position 2050 only (--from-step 1), its prefill left to the reference.
class LateDecode : public testing::TestWithParam<const char*> {};

TEST_P(LateDecode, JudgedPastTheOriginalContextsHighFrequencyWavelength) {
  RunOptions o;
  o.model = "synthetic:llama3-tiny";
  o.candidate = GetParam();
  o.layers = 1;
  o.prompt_tokens = 2050;
  o.decode_steps = 1;
  o.from_step = 1;
  o.isolate_process = false;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  ASSERT_FALSE(r.results.empty()) << r.verdict;
  for (const StageResult& s : r.results)
    EXPECT_EQ(s.key.step, 1) << s.key.stage << " was judged at the prefill";
  const auto q_rope = std::find_if(r.results.begin(), r.results.end(),
                                   [](const StageResult& s) { return s.key.stage == "q_rope"; });
  ASSERT_NE(q_rope, r.results.end());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  EXPECT_EQ(q_rope->status, Status::pass) << q_rope->note;
}

// mutant:rope-no-scaling fails this same run: its row in the mutant table.
INSTANTIATE_TEST_SUITE_P(Candidates, LateDecode, testing::Values("simt", "cpu-f16"), [](const auto& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
});

// --from-step is refused where the candidate would need its own earlier outputs, or past the run.
TEST(LateDecode, FromStepIsRefusedInChainedModeAndPastTheLastStep) {
  RunOptions o;
  o.model = "synthetic:llama3-tiny";
  o.candidate = "simt";
  o.decode_steps = 1;
  o.from_step = 1;
  o.isolate_process = false;
  o.modes = {Mode::isolated, Mode::chained};
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), InputError);
  o.modes = {Mode::isolated};
  o.from_step = 2;
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), InputError);
}

}  // namespace
}  // namespace ds
