// The oracle as a whole, for every family: prefill + decode equals one prefill (seed 003,
// F-REALIZE-001), stages match the catalog, precision modes round, the gate refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model_error.h"
#include "ops.h"
#include "reference.h"
#include "stage_catalog.h"
#include "synthetic.h"
#include "test_util.h"

namespace ds::ref {
namespace {

const char* const kTiny[] = {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "gpt2-tiny", "qwen35-tiny"};

std::string param_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string s = info.param;
  std::replace_if(
      s.begin(), s.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '_');
  return s;
}

// Logits of every token when `tokens` is fed as a prefill of `n` followed by single-token steps.
Tensor incremental_logits(Reference& r, const std::vector<std::int32_t>& tokens, int n) {
  Tensor all = r.forward(std::span(tokens.data(), std::size_t(n)));
  for (std::size_t t = std::size_t(n); t < tokens.size(); ++t)
    all = Tensor::concat_rows(all, r.forward(std::span(tokens.data() + t, 1)));
  return all;
}

class FamilyTest : public ::testing::TestWithParam<const char*> {
 protected:
  Model model() const { return make_synthetic(GetParam(), 1); }
};

TEST_P(FamilyTest, PrefillThenDecodeEqualsOnePrefill) {
  const Model m = model();
  const auto tokens = test::token_ids(9, m.config.vocab, 2);
  Reference whole(m), steps(m);
  const Tensor a = whole.forward(tokens);
  const Tensor b = incremental_logits(steps, tokens, 5);
  EXPECT_LE(test::max_abs_diff(a, b), 1e-9);
  EXPECT_EQ(steps.positions(), 9);
}

TEST_P(FamilyTest, ChunkedPrefillEqualsOnePrefill) {
  const Model m = model();
  const auto tokens = test::token_ids(8, m.config.vocab, 3);
  Reference whole(m), chunks(m);
  const Tensor a = whole.forward(tokens);
  Tensor b = chunks.forward(std::span(tokens.data(), 3));
  b = Tensor::concat_rows(b, chunks.forward(std::span(tokens.data() + 3, 5)));
  EXPECT_LE(test::max_abs_diff(a, b), 1e-9);
}

TEST_P(FamilyTest, EveryLayerProducesExactlyItsCatalogStages) {
  const Model m = model();
  Reference r(m);
  const auto tokens = test::token_ids(3, m.config.vocab, 4);
  Tensor x = r.embed(tokens, 0).at("embed");
  for (int l = 0; l < m.config.n_layers; ++l) {
    const TensorMap s = r.layer(l, x, 0);
    std::vector<std::string_view> got;
    for (const auto& kv : s) got.push_back(kv.first);
    auto want = stages_for(m.config, l);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << "layer " << l;
    for (const auto& [name, t] : s) {
      EXPECT_EQ(t.rank(), 2) << name;
      if (name != "conv_state" && name != "gdn_state") {
        EXPECT_EQ(t.dim(0), 3) << name;
      }
    }
    x = s.at("residual_2");
  }
  const TensorMap h = r.head(x);
  EXPECT_EQ(h.at("logits").dim(1), m.config.vocab);
}

// An isolated-mode floor hands a layer the candidate's rounded inputs of some stages: what
// follows consumes the forced value, the stage itself still reports the block's own.
TEST_P(FamilyTest, ForcedStageFeedsWhatFollowsButReportsItsOwnValue) {
  const Model m = model();
  const auto tokens = test::token_ids(4, m.config.vocab, 5);
  Reference plain(m), forced_run(m);
  const Tensor x = plain.embed(tokens, 0).at("embed");
  const TensorMap a = plain.layer(0, x, 0);
  TensorMap forced;
  forced["residual_1"] = add(a.at("residual_1"), a.at("residual_1"));
  const TensorMap b = forced_run.layer(0, x, 0, &forced);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(test::max_abs_diff(a.at("residual_1"), b.at("residual_1")), 0.0);
  EXPECT_GT(test::max_abs_diff(a.at("residual_2"), b.at("residual_2")), 1e-3);
  // Stages before the forced one are untouched (a GDN layer's projection is out_proj).
  const char* before = a.count("attn_out") ? "attn_out" : "out_proj";
  EXPECT_EQ(test::max_abs_diff(a.at(before), b.at(before)), 0.0);
}

TEST_P(FamilyTest, ResetStartsANewSequence) {
  const Model m = model();
  Reference r(m);
  const auto tokens = test::token_ids(4, m.config.vocab, 5);
  const Tensor a = r.forward(tokens);
  r.reset();
  EXPECT_EQ(test::max_abs_diff(r.forward(tokens), a), 0.0);
}

TEST_P(FamilyTest, StorageModeRoundsEveryStage) {
  const Model m = model();
  Reference r(m, {DType::f16});
  const auto tokens = test::token_ids(3, m.config.vocab, 6);
  Tensor x = r.embed(tokens, 0).at("embed");
  for (int l = 0; l < m.config.n_layers; ++l) {
    const TensorMap s = r.layer(l, x, 0);
    for (const auto& [name, t] : s)
      for (std::int64_t i = 0; i < t.numel(); ++i)
        ASSERT_EQ(t.at(i), round_to(DType::f16, t.at(i))) << "layer " << l << " " << name << " element " << i;
    x = s.at("residual_2");
  }
  for (const auto& [name, t] : r.head(x))
    for (std::int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t.at(i), round_to(DType::f16, t.at(i))) << name;
}

TEST_P(FamilyTest, Bf16StorageIsANoiseFloorNotAnotherModel) {
  const Model m = model();
  const auto tokens = test::token_ids(6, m.config.vocab, 9);
  Reference exact(m), bf16(m, {DType::bf16});
  const Tensor a = exact.forward(tokens), b = bf16.forward(tokens);
  const double d = test::max_abs_diff(a, b);
  EXPECT_GT(d, 0.0);
  double scale = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) scale = std::max(scale, std::abs(a.at(i)));
  EXPECT_LT(d, 0.1 * scale);
}

TEST_P(FamilyTest, OutOfOrderStepIsRefused) {
  const Model m = model();
  Reference r(m);
  const auto tokens = test::token_ids(2, m.config.vocab, 7);
  const Tensor x = r.embed(tokens, 0).at("embed");
  EXPECT_THROW(r.layer(0, x, 5), std::logic_error);
}

TEST_P(FamilyTest, GreedyGenerationIsDeterministic) {
  const Model m = model();
  Reference a(m), b(m);
  const auto prompt = test::token_ids(4, m.config.vocab, 8);
  const auto ga = a.generate(prompt, 3);
  EXPECT_EQ(ga.size(), 3u);
  EXPECT_EQ(ga, b.generate(prompt, 3));
}

INSTANTIATE_TEST_SUITE_P(Tiny, FamilyTest, ::testing::ValuesIn(kTiny), param_name);

TEST(Mistral, SlidingWindowPrefillEqualsDecodeAndMatters) {
  Model m = make_synthetic("llama-tiny", 1);
  m.config.sliding_window = 3;
  const auto tokens = test::token_ids(9, m.config.vocab, 12);
  Reference whole(m), steps(m), full(make_synthetic("llama-tiny", 1));
  const Tensor a = whole.forward(tokens);
  EXPECT_LE(test::max_abs_diff(a, incremental_logits(steps, tokens, 4)), 1e-9);
  const Tensor b = full.forward(tokens);
  EXPECT_EQ(test::max_abs_diff(a.rows(0, 3), b.rows(0, 3)), 0.0);  // within the window: identical
  EXPECT_GT(test::max_abs_diff(a.rows(3, 9), b.rows(3, 9)), 1e-9);
}

TEST(Greedy, ArgmaxOfLastRowLowestIdOnTies) {
  const Tensor l = test::mat(2, 4, {9, 0, 0, 0, 1, 3, 3, 2});
  EXPECT_EQ(Reference::greedy_next(l), 1);
}

// --- Qwen3-Next [DIFF] choices ---

Tensor run_logits(const Model& m, int n_prefill) {
  Reference r(m);
  return incremental_logits(r, test::token_ids(6, m.config.vocab, 9), n_prefill);
}

TEST(Qwen3Next, ConvStateLengthChangesOnlyTheStage) {
  Model k1 = make_synthetic("qwen35-tiny", 1), k = k1;
  k.config.conv_state_len = ConvStateLen::k;
  EXPECT_EQ(test::max_abs_diff(run_logits(k1, 3), run_logits(k, 3)), 0.0);
  Reference r(k);
  const auto tokens = test::token_ids(2, k.config.vocab, 1);
  const TensorMap s = r.layer(0, r.embed(tokens, 0).at("embed"), 0);
  EXPECT_EQ(s.at("conv_state").dim(0), k.config.conv_kernel);
  EXPECT_EQ(s.at("conv_state").dim(1), k.config.gdn_conv_dim());
}

TEST(Qwen3Next, StateLayoutsAreTransposes) {
  Model a = make_synthetic("qwen35-tiny", 1), b = a;
  b.config.gdn_state_layout = GdnStateLayout::value_major;
  const auto tokens = test::token_ids(3, a.config.vocab, 2);
  Reference ra(a), rb(b);
  const Tensor sa = ra.layer(0, ra.embed(tokens, 0).at("embed"), 0).at("gdn_state");
  const Tensor sb = rb.layer(0, rb.embed(tokens, 0).at("embed"), 0).at("gdn_state");
  const std::int64_t nv = a.config.gdn_v_heads, dk = a.config.gdn_k_dim, dv = a.config.gdn_v_dim;
  ASSERT_EQ(sa.shape(), (Shape{nv * dk, dv}));
  ASSERT_EQ(sb.shape(), (Shape{nv * dv, dk}));
  for (std::int64_t h = 0; h < nv; ++h)
    for (std::int64_t i = 0; i < dk; ++i)
      for (std::int64_t j = 0; j < dv; ++j)
        ASSERT_EQ(sa.at((h * dk + i) * dv + j), sb.at((h * dv + j) * dk + i));
}

TEST(Qwen3Next, HeadMapMatters) {
  Model a = make_synthetic("qwen35-tiny", 1), b = a;
  b.config.gdn_head_map = GdnHeadMap::tiled;
  EXPECT_GT(test::max_abs_diff(run_logits(a, 6), run_logits(b, 6)), 1e-6);
}

TEST(Qwen3Next, LayerKindsAlternate) {
  const ModelConfig c = synthetic_config("qwen35-tiny");
  EXPECT_EQ(c.block_kind(0), BlockKind::gdn);
  EXPECT_EQ(c.block_kind(1), BlockKind::gated_attn);
  EXPECT_EQ(c.rotary_dim(), 4);
}

// --- Completeness gate (seed 001 FALSIFY-ARCH-008) ---

TEST(CompletenessGate, MissingQkNormIsRefusedBeforeAnyStage) {
  Model m = make_synthetic("qwen3-tiny", 1);
  m.weights.erase("blk.1.attn_k_norm.weight");
  try {
    Reference r(m);
    FAIL() << "a qwen3 model without blk.1.attn_k_norm.weight was accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.attn_k_norm.weight"), std::string::npos) << e.what();
  }
}

TEST(Presets, RealShapePresetRunsTruncated) {
  const Model m = make_synthetic("gpt2-small", 1, 1);
  Reference r(m);
  const std::vector<std::int32_t> tokens = {50256, 464};
  const Tensor logits = r.forward(tokens);
  ASSERT_EQ(logits.shape(), (Shape{2, 50257}));
  for (std::int64_t i = 0; i < logits.numel(); i += 997) ASSERT_TRUE(std::isfinite(logits.at(i)));
}

// Real-shape presets come in the dtype their checkpoints ship in (bf16 Qwen and Llama, f32 GPT-2);
// the tiny ones stay f32, the weights the other tests and golden traces were written against.
TEST(Presets, GeneratedInTheDtypeTheirCheckpointsShip) {
  const std::pair<const char*, DType> table[] = {
      {"qwen2.5-0.5b", DType::bf16}, {"qwen3-0.6b", DType::bf16}, {"llama3.2-1b", DType::bf16},
      {"gpt2-small", DType::f32},    {"llama-tiny", DType::f32},  {"qwen35-tiny", DType::f32},
  };
  for (const auto& [preset, dtype] : table) EXPECT_EQ(synthetic_dtype(preset), dtype) << preset;
  const Model m = make_synthetic("qwen2.5-0.5b", 1, 1);
  EXPECT_EQ(m.weights.get("token_embd.weight").dtype(), DType::bf16);
  EXPECT_EQ(m.weights.get("blk.0.attn_q.bias").dtype(), DType::bf16);
}

TEST(Presets, RealShapesTruncateQuickly) {
  const Model m = make_synthetic("qwen2.5-0.5b", 1, 2);
  EXPECT_EQ(m.config.n_layers, 2);
  EXPECT_EQ(m.weights.get("token_embd.weight").dim(0), 151936);
  EXPECT_FALSE(m.weights.has("blk.2.attn_q.weight"));
  EXPECT_TRUE(m.config.tied_embeddings);
}

}  // namespace
}  // namespace ds::ref
