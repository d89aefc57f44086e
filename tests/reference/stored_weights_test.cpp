// The reference keeps matrices and tables in their stored dtype (or quantized, as a GGUF stores
// them) and widens them a row at a time: every stage tensor must have the bits it had when every
// weight was widened to f64 up front.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "load_model.h"
#include "loaders/gguf.h"
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

// Runs `steps` through both references, stage by stage (each layer fed `want`'s residual), and
// expects every stage of `got` to have `want`'s bits.
void expect_same_runs(Reference& want, Reference& got, int layers,
                      const std::vector<std::vector<std::int32_t>>& steps) {
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const int pos0 = got.positions();
    const TensorMap we = want.embed(steps[s], pos0), ge = got.embed(steps[s], pos0);
    expect_same_stages(we, ge, fmt::format("step {} embed", s));
    Tensor x = we.at("embed");
    for (int l = 0; l < layers; ++l) {
      const TensorMap wl = want.layer(l, x, pos0), gl = got.layer(l, x, pos0);
      expect_same_stages(wl, gl, fmt::format("step {} layer {}", s, l));
      x = wl.at("residual_2");
    }
    expect_same_stages(want.head(x), got.head(x), fmt::format("step {} head", s));
  }
}

class StoredWeights : public ::testing::TestWithParam<Case> {};

TEST_P(StoredWeights, EveryStageHasTheBitsOfWeightsWidenedUpFront) {
  const Case& c = GetParam();
  const auto model = std::make_shared<const Model>(model_in(c));
  Reference widened(*model, {c.storage, true});
  Reference stored(model, {c.storage, false});
  expect_same_runs(widened, stored, model->config.n_layers, {{5, 17, 42, 7, 99}, {3}, {250}});
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

// A GGUF's quantized matrices stay quantized in memory (WeightStore::quantized) and the reference
// decodes them a row at a time: every stage, of the oracle and of an engine's noise floor, must
// have the bits it has when every matrix is decoded to f32 up front, and nothing may be decoded
// whole along the way. Synthetic presets written as Q8_0 here; every type llama.cpp's quantizer
// wrote, from the shared peers, where they are present.
namespace fs = std::filesystem;

const fs::path kPeerQuants =
    fs::path(DRIFTSCOPE_FIXTURES_DIR).parent_path().parent_path() / "shared" / "peers" / "llama.cpp";

struct QuantCase {
  const char* name;
  const char* preset;  // written as Q8_0 here (or as `mix` says); empty: `peer` is read
  const char* peer;    // a file under kPeerQuants
  const char* numerics;
  GgufMix mix = GgufMix::uniform;
};

// The model of `c` as load_model holds it; empty when a peer file is absent.
std::optional<Model> load_case(const QuantCase& c) {
  if (*c.preset == '\0') {
    const fs::path p = kPeerQuants / c.peer;
    if (!fs::exists(p)) return std::nullopt;
    return load_model(p.string());
  }
  const fs::path dir = test::temp_dir(fmt::format("quant-{}", c.name));
  const std::string path = (dir / "m.gguf").string();
  // The model holds the file's mapping, not the path: the directory goes however the load ends.
  const std::unique_ptr<const fs::path, void (*)(const fs::path*)> remove(&dir, [](const fs::path* d) {
    std::error_code ec;
    fs::remove_all(*d, ec);
  });
  write_gguf(make_synthetic(c.preset, 5), path, {.matrix_type = GgmlType::Q8_0, .mix = c.mix});
  return load_model(path);
}

// The same model with every quantized matrix decoded to an f32 tensor up front.
Model decoded(const Model& m) {
  Model d = m;
  for (const auto& [name, q] : m.weights.quantized()) d.weights.put(name, q.dequantized());
  return d;
}

void PrintTo(const QuantCase& c, std::ostream* os) { *os << c.name; }

class QuantizedWeights : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantizedWeights, EveryStageHasTheBitsOfTheMatricesDecodedUpFront) {
  const QuantCase& c = GetParam();
  const auto loaded = load_case(c);
  if (!loaded) GTEST_SKIP() << "no shared llama.cpp peers at " << (kPeerQuants / c.peer);
  // The loader read the shapes it checks without decoding a matrix.
  EXPECT_EQ(loaded->weights.dequantized_count(), 0u);
  const auto model = std::make_shared<const Model>(*loaded);
  ASSERT_FALSE(model->weights.quantized().empty()) << "nothing stayed quantized: the test could not fail";
  for (const auto& [name, q] : model->weights.quantized()) EXPECT_EQ(model->file_type(name), q.type) << name;
  const auto whole = std::make_shared<const Model>(decoded(*model));
  const ReferenceOptions options{DType::f64, false,
                                 parse_numerics(*c.numerics ? c.numerics : "one-rounding")};
  Reference want(whole, options), got(model, options);
  expect_same_runs(want, got, model->config.n_layers, {{5, 17, 42, 7}, {3}});
  // Read a row at a time: no matrix was decoded whole (the hybrids' GDN projections, which the
  // loader reorders by column, are f32 tensors before anything reads them).
  EXPECT_EQ(model->weights.dequantized_count(), 0u);
}

TEST_P(QuantizedWeights, HoldsTheFilesBytesNotAnF32Copy) {
  const QuantCase& c = GetParam();
  const auto model = load_case(c);
  if (!model) GTEST_SKIP() << "no shared llama.cpp peers at " << (kPeerQuants / c.peer);
  std::uint64_t f32 = 0;
  for (const std::string& name : model->weights.names())
    f32 += std::uint64_t(numel(*model->weights.shape_of(name))) * 4;
  // Q8_0 is 34 bytes per 32 weights; the smallest types under a fifth of f32.
  EXPECT_LT(double(model->weights.stored_bytes()), 0.5 * double(f32));
}

INSTANTIATE_TEST_SUITE_P(
    Files, QuantizedWeights,
    ::testing::Values(
        QuantCase{"LlamaQ8_0", "llama-tiny", "", ""}, QuantCase{"Qwen2BiasQ8_0", "qwen2-bias-tiny", "", ""},
        QuantCase{"Qwen2Q8_0EngineNumerics", "qwen2-tiny", "", "llama.cpp-default"},
        QuantCase{"Gpt2Q8_0", "gpt2-tiny", "", ""}, QuantCase{"Qwen3MoeQ8_0", "qwen3moe-tiny", "", ""},
        QuantCase{"Qwen35Q8_0", "qwen35-tiny", "", ""},
        // Written as llama.cpp's Q4_K_M mix: Q4_K, Q5_K (GPT-2's fused QKV) and Q6_K at real widths;
        // at tiny widths (no multiple of 256) their fallbacks Q5_0, Q5_1 and Q8_0; Mixtral's Q8_0 K/V.
        QuantCase{"LlamaWideQ4_K_M", "llama-wide", "", "", GgufMix::q4_k_m},
        QuantCase{"Gpt2WideQ4_K_M", "gpt2-wide", "", "", GgufMix::q4_k_m},
        QuantCase{"Qwen2Q4_K_M", "qwen2-tiny", "", "", GgufMix::q4_k_m},
        QuantCase{"Gpt2Q4_K_M", "gpt2-tiny", "", "", GgufMix::q4_k_m},
        QuantCase{"MixtralQ4_K_M", "mixtral-tiny", "", "", GgufMix::q4_k_m},
        QuantCase{"PeerQ4_K_M", "", "models/llama256.q4_k_m.gguf", "llama.cpp-default"},
        QuantCase{"PeerQ8_0", "", "models/llama256.q8_0.gguf", ""},
        QuantCase{"PeerQ2_K", "", "quants/llama256.Q2_K.gguf", ""},
        QuantCase{"PeerQ3_K_M", "", "quants/llama256.Q3_K_M.gguf", ""},
        QuantCase{"PeerQ4_0", "", "quants/llama256.Q4_0.gguf", ""},
        QuantCase{"PeerQ4_1EngineNumerics", "", "quants/llama256.Q4_1.gguf", "llama.cpp-default"},
        QuantCase{"PeerQ5_0", "", "quants/llama256.Q5_0.gguf", ""},
        QuantCase{"PeerQ5_1", "", "quants/llama256.Q5_1.gguf", ""},
        QuantCase{"PeerQ5_K_M", "", "quants/llama256.Q5_K_M.gguf", ""},
        QuantCase{"PeerQ6_K", "", "quants/llama256.Q6_K.gguf", ""},
        QuantCase{"PeerIQ4_NL", "", "quants/llama256.IQ4_NL.gguf", ""},
        QuantCase{"PeerIQ4_XS", "", "quants/llama256.IQ4_XS.gguf", "llama.cpp-default"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ds::ref
