// The coverage gate and the merged plan of a partial candidate and the reference fill.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "contracts.h"
#include "load_model.h"
#include "plan_check.h"
#include "registry.h"
#include "runner.h"

namespace ds {
namespace {

// A candidate whose plan is given by the test, one plan for decoder blocks.
class ScriptedCandidate final : public Candidate {
 public:
  explicit ScriptedCandidate(std::vector<KernelStep> decoder, std::vector<KernelStep> embed = {},
                             std::vector<KernelStep> head = {})
      : decoder_(std::move(decoder)), embed_(std::move(embed)), head_(std::move(head)) {}
  std::string name() const override { return "scripted"; }
  std::string description() const override { return "a plan under test"; }
  DType storage_dtype() const override { return DType::f16; }
  OpSet capabilities() const override { return {Op::RMSNorm}; }
  std::vector<KernelStep> plan(const ModelConfig&, BlockKind kind) const override {
    return kind == BlockKind::decoder ? decoder_
           : kind == BlockKind::embed ? embed_
           : kind == BlockKind::head  ? head_
                                      : std::vector<KernelStep>{};
  }
  void load(const ModelConfig&, const WeightStore&) override {}
  void run(const KernelStep&, const StepContext&, const TensorMap&, TensorMap&) override {}

 private:
  std::vector<KernelStep> decoder_, embed_, head_;
};

ModelConfig qwen2() { return load_config_spec("synthetic:qwen2-tiny", 0); }

std::vector<std::string> names(const std::vector<KernelStep>& plan) {
  std::vector<std::string> n;
  for (const auto& s : plan) n.push_back(s.name);
  return n;
}

TEST(Coverage, AFullCandidateHasNoGap) {
  const CandidatePtr c = make_candidate("cpu-f16");
  const Coverage cov = plan_coverage(qwen2(), *c);
  EXPECT_TRUE(cov.complete()) << cov.describe_gaps();
}

TEST(Coverage, APartialCandidateNamesEveryStageAndBlockKindItLeavesOut) {
  const ScriptedCandidate c({{"norm", {"x"}, {"attn_norm"}}});
  const Coverage cov = plan_coverage(qwen2(), c);
  ASSERT_FALSE(cov.complete());
  EXPECT_EQ(cov.missing_count(), 1u + 14u + 2u);  // embed; 15 decoder stages less attn_norm; head
  EXPECT_EQ(cov.describe_gaps(),
            "embed: embed; decoder blocks: q, k, v, q_rope, k_rope, attn, attn_out, residual_1, ffn_norm, "
            "gate, up, "
            "ffn_act, down, residual_2; head: final_norm, logits");
  EXPECT_EQ(covered_ops(ref::required_ops(qwen2()), cov).str(), "[RMSNorm]");
}

struct BadPlan {
  const char* name;
  std::vector<KernelStep> plan;
  const char* says;
};

void PrintTo(const BadPlan& p, std::ostream* os) { *os << p.name; }

class PlanErrors : public testing::TestWithParam<BadPlan> {};

TEST_P(PlanErrors, AreRefusedNamingTheStepAndTheName) {
  const ScriptedCandidate c(GetParam().plan);
  try {
    plan_coverage(qwen2(), c);
    FAIL() << "expected a PlanError";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam().says), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Plans, PlanErrors,
    testing::Values(BadPlan{"output_not_a_stage",
                            {{"norm", {"x"}, {"attn-norm"}}},
                            "produces 'attn-norm', which is not a stage"},
                    BadPlan{"stage_produced_twice",
                            {{"a", {"x"}, {"attn_norm"}}, {"b", {"x"}, {"attn_norm"}}},
                            "stage 'attn_norm' of decoder blocks is produced twice, by steps 'a' and 'b'"},
                    BadPlan{"unknown_input",
                            {{"norm", {"hidden"}, {"attn_norm"}}},
                            "reads 'hidden', which is not an input name"},
                    BadPlan{"unknown_cache", {{"attn", {"cache:kv"}, {"attn"}}}, "reads 'cache:kv'"},
                    BadPlan{"step_without_outputs",
                            {{"nothing", {"x"}, {}}},
                            "step 'nothing' of its decoder blocks plan produces nothing"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(MergeWithFill, OwnStepsKeepTheirNamesAndFillStepsComeInCatalogOrder) {
  const CandidatePtr fill = make_fill_candidate(DType::f16);
  const ModelConfig cfg = qwen2();
  const std::vector<KernelStep> own = {{"my_swiglu", {"gate", "up"}, {"ffn_act"}}};
  const std::vector<KernelStep> merged =
      merge_with_fill(cfg, BlockKind::decoder, own, fill->plan(cfg, BlockKind::decoder));
  const std::vector<std::string> n = names(merged);
  const auto at = [&](const std::string& s) { return std::find(n.begin(), n.end(), s) - n.begin(); };
  ASSERT_NE(at("my_swiglu"), std::ptrdiff_t(n.size()));
  EXPECT_EQ(std::count(n.begin(), n.end(), "fill:swiglu"), 0);  // the candidate produces ffn_act
  EXPECT_LT(at("fill:gate_up"), at("my_swiglu"));
  EXPECT_LT(at("my_swiglu"), at("fill:down"));
  EXPECT_LT(at("fill:attn_norm"), at("fill:qkv"));
  for (const auto& s : merged) EXPECT_EQ(is_fill_step(s), s.name != "my_swiglu") << s.name;
}

TEST(MergeWithFill, AFusedFillStepKeepsOnlyTheStagesTheCandidateLeavesOut) {
  const CandidatePtr fill = make_fill_candidate(DType::f16);
  const ModelConfig cfg = qwen2();
  const std::vector<KernelStep> own = {{"my_q", {"attn_norm"}, {"q"}}};
  const auto merged = merge_with_fill(cfg, BlockKind::decoder, own, fill->plan(cfg, BlockKind::decoder));
  const auto it =
      std::find_if(merged.begin(), merged.end(), [](const KernelStep& s) { return s.name == "fill:qkv"; });
  ASSERT_NE(it, merged.end());
  EXPECT_EQ(it->outputs, (std::vector<std::string>{"k", "v"}));
}

TEST(MergeWithFill, StepsThatWaitOnEachOtherAreRefused) {
  const CandidatePtr fill = make_fill_candidate(DType::f16);
  const ModelConfig cfg = qwen2();
  const std::vector<KernelStep> own = {
      {"a", {"ffn_norm"}, {"attn_norm"}}};  // ffn_norm needs attn_norm's chain
  EXPECT_THROW(merge_with_fill(cfg, BlockKind::decoder, own, fill->plan(cfg, BlockKind::decoder)), PlanError);
}

}  // namespace
}  // namespace ds
