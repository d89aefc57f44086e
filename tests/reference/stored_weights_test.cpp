// The reference keeps matrices and tables in their stored dtype and widens them a row at a time:
// every stage tensor must have the bits it had when every weight was widened to f64 up front.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "reference.h"
#include "synthetic.h"
#include "test_util.h"

namespace ds::ref {
namespace {

struct Case {
  const char* name;
  const char* preset;
  DType weights;  // every weight converted to this before the run
  DType storage;  // the reference's stage rounding (f64: the oracle, else a noise floor)
};

Model model_in(const Case& c) {
  Model m = make_synthetic(c.preset, 3, 0);
  if (c.weights == DType::f32) return m;
  WeightStore converted;
  for (const auto& [name, t] : m.weights.all()) converted.put(name, t.to(c.weights));
  m.weights = std::move(converted);
  return m;
}

void expect_same_stages(const TensorMap& widened, const TensorMap& stored, const std::string& where) {
  ASSERT_EQ(widened.size(), stored.size()) << where;
  for (const auto& [stage, t] : widened) {
    auto it = stored.find(stage);
    ASSERT_NE(it, stored.end()) << where << " " << stage;
    EXPECT_TRUE(test::same_bits(t, it->second)) << where << " stage " << stage;
  }
}

class StoredWeights : public ::testing::TestWithParam<Case> {};

TEST_P(StoredWeights, EveryStageHasTheBitsOfWeightsWidenedUpFront) {
  const Case& c = GetParam();
  const auto model = std::make_shared<const Model>(model_in(c));
  Reference widened(*model, {c.storage, true});
  Reference stored(model, {c.storage, false});
  const std::vector<std::vector<std::int32_t>> steps = {{5, 17, 42, 7, 99}, {3}, {250}};
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const int pos0 = stored.positions();
    const TensorMap we = widened.embed(steps[s], pos0), se = stored.embed(steps[s], pos0);
    expect_same_stages(we, se, fmt::format("step {} embed", s));
    Tensor x = we.at("embed");
    for (int l = 0; l < model->config.n_layers; ++l) {
      const TensorMap wl = widened.layer(l, x, pos0), sl = stored.layer(l, x, pos0);
      expect_same_stages(wl, sl, fmt::format("step {} layer {}", s, l));
      x = wl.at("residual_2");
    }
    expect_same_stages(widened.head(x), stored.head(x), fmt::format("step {} head", s));
  }
}

TEST_P(StoredWeights, MatricesAreTheModelsOwnTensorsAndVectorsAreWidened) {
  const Case& c = GetParam();
  const auto model = std::make_shared<const Model>(model_in(c));
  const Reference stored(model, {c.storage, false});
  for (const char* name : {"token_embd.weight", "blk.0.ffn_down.weight"})
    EXPECT_EQ(&stored.w(name), &model->weights.get(name)) << name;  // shared, not copied
  EXPECT_EQ(stored.w("output_norm.weight").dtype(), DType::f64);
}

INSTANTIATE_TEST_SUITE_P(
    Presets, StoredWeights,
    ::testing::Values(Case{"LlamaF32", "llama-tiny", DType::f32, DType::f64},
                      Case{"LlamaBf16", "llama-tiny", DType::bf16, DType::f64},
                      Case{"Qwen2F16", "qwen2-tiny", DType::f16, DType::f64},
                      Case{"Qwen2BiasBf16", "qwen2-bias-tiny", DType::bf16, DType::f64},
                      Case{"Qwen3Bf16FloorF16", "qwen3-tiny", DType::bf16, DType::f16},
                      Case{"Gpt2F32", "gpt2-tiny", DType::f32, DType::f64},
                      Case{"Gpt2F16FloorBf16", "gpt2-tiny", DType::f16, DType::bf16},
                      Case{"Qwen3NextBf16", "qwen35-tiny", DType::bf16, DType::f64},
                      Case{"Qwen3NextF32FloorF16", "qwen35-tiny", DType::f32, DType::f16},
                      Case{"Llama3RopeScalingBf16", "llama3-tiny", DType::bf16, DType::f64}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ds::ref
