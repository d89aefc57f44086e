// Real weight files: the committed fixtures (GGUF and safetensors of the synthetic presets)
// load to the same model and give the same reference outputs; errors name file and field.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "contracts.h"
#include "gguf.h"
#include "hf.h"
#include "load_model.h"
#include "ops.h"
#include "reference.h"
#include "safetensors.h"
#include "shapes.h"
#include "synthetic.h"
#include "test_util.h"

namespace ds {
// gtest finds a printer by ADL, so in the enum's namespace; static: this file's own.
static void PrintTo(DType t, std::ostream* os) { *os << dtype_name(t); }
}  // namespace ds

namespace ds::ref {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(DRIFTSCOPE_FIXTURES_DIR) / "models";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Logits of a 5-token prefill followed by two decode steps.
Tensor run(const Model& m) {
  Reference r(m);
  const auto tokens = test::token_ids(7, m.config.vocab, 11);
  Tensor out = r.forward(std::span(tokens.data(), 5));
  for (std::size_t t = 5; t < tokens.size(); ++t)
    out = Tensor::concat_rows(out, r.forward(std::span(tokens.data() + t, 1)));
  return out;
}

class FixtureFiles : public ::testing::TestWithParam<const char*> {};

TEST_P(FixtureFiles, GgufAndSafetensorsGiveTheSyntheticOutputs) {
  const std::string preset = GetParam();
  const Model syn = make_synthetic(preset, 1);
  const Model gguf = load_model((kModels / (preset + ".gguf")).string());
  const Model hf = load_model((kModels / preset).string());
  for (const Model* m : {&gguf, &hf}) {
    SCOPED_TRACE(m->config.name);
    EXPECT_EQ(m->config.family, syn.config.family);
    EXPECT_EQ(m->config.n_layers, syn.config.n_layers);
    EXPECT_EQ(m->config.hidden, syn.config.hidden);
    EXPECT_EQ(m->config.head_dim, syn.config.head_dim);
    EXPECT_EQ(m->config.norm_eps, syn.config.norm_eps);
    EXPECT_EQ(m->config.rope_theta, syn.config.rope_theta);
    EXPECT_EQ(m->config.rotary_dim(), syn.config.rotary_dim());
    EXPECT_EQ(m->config.layer_kinds, syn.config.layer_kinds);
    EXPECT_EQ(m->config.tied_embeddings, syn.config.tied_embeddings);
    EXPECT_TRUE(check_completeness(*m).empty());
  }
  const Tensor want = run(syn);
  // qwen35 GGUF keeps the value heads tiled: ssm_out sums them in another order.
  EXPECT_LE(test::max_abs_diff(run(gguf), want), preset == "qwen35-tiny" ? 1e-12 : 0.0);
  // -exp(A_log) of the f64 A_log written to safetensors is within an ulp of the f32 A.
  EXPECT_LE(test::max_abs_diff(run(hf), want), preset == "qwen35-tiny" ? 1e-12 : 0.0);
}

TEST_P(FixtureFiles, CommittedFilesAreWhatTheGeneratorWrites) {
  const std::string preset = GetParam();
  const fs::path dir = test::temp_dir("regen");
  const Model syn = make_synthetic(preset, 1);
  write_gguf(syn, (dir / (preset + ".gguf")).string());
  write_hf(syn, (dir / preset).string());
  EXPECT_EQ(slurp(dir / (preset + ".gguf")), slurp(kModels / (preset + ".gguf")))
      << "re-run driftscope-mkfixture";
  EXPECT_EQ(slurp(dir / preset / "model.safetensors"), slurp(kModels / preset / "model.safetensors"));
  EXPECT_EQ(slurp(dir / preset / "config.json"), slurp(kModels / preset / "config.json"));
  fs::remove_all(dir);
}

TEST_P(FixtureFiles, LayerTruncationSkipsLaterLayers) {
  const std::string preset = GetParam();
  for (const fs::path& p : {kModels / (preset + ".gguf"), kModels / preset}) {
    const Model m = load_model(p.string(), 0, 1);
    EXPECT_EQ(m.config.n_layers, 1);
    EXPECT_FALSE(m.weights.has(layer_weight(1, "ffn_down.weight"))) << p;
    EXPECT_TRUE(m.weights.has(layer_weight(0, "ffn_down.weight"))) << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, FixtureFiles,
                         ::testing::Values("llama-tiny", "qwen2-tiny", "qwen3-tiny", "gpt2-tiny",
                                           "qwen35-tiny"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

TEST(Gguf, MissingRequiredTensorIsRefusedNamingIt) {
  Model m = make_synthetic("qwen3-tiny", 1);
  m.weights.erase("blk.1.attn_k_norm.weight");
  const fs::path dir = test::temp_dir("missing");
  const std::string path = (dir / "qwen3-missing.gguf").string();
  write_gguf(m, path);
  const Model loaded = load_model(path);
  const auto missing = check_completeness(loaded);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].tensor, "blk.1.attn_k_norm.weight");
  EXPECT_EQ(missing[0].layer, 1);
  try {
    Reference r(loaded);
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.attn_k_norm.weight"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Gguf, LlamaPermutationKeptOrUndone) {
  const std::string path = (kModels / "llama-tiny.gguf").string();
  const Model hf_layout = load_model(path);
  LoadOptions keep;
  keep.llama_qk = LlamaQkLayout::keep_gguf;
  const Model gguf_layout = load_model(path, 0, 0, keep);
  EXPECT_EQ(hf_layout.config.rope_mode, RopeMode::neox);
  EXPECT_EQ(gguf_layout.config.rope_mode, RopeMode::normal);
  EXPECT_TRUE(gguf_layout.config.qk_rows_permuted);
  EXPECT_FALSE(hf_layout.config.qk_rows_permuted);
  EXPECT_GT(test::max_abs_diff(hf_layout.weights.get("blk.0.attn_q.weight"),
                               gguf_layout.weights.get("blk.0.attn_q.weight")),
            0.0);
  // Interleaved RoPE on permuted rows equals rotate_half on HF rows: same logits.
  EXPECT_LE(test::max_abs_diff(run(hf_layout), run(gguf_layout)), 1e-12);
}

TEST(Gguf, Q8_0FileDequantisesExactlyAndStaysClose) {
  const Model syn = make_synthetic("qwen2-tiny", 1);
  const fs::path dir = test::temp_dir("q8");
  const std::string path = (dir / "q8.gguf").string();
  write_gguf(syn, path, {GgmlType::Q8_0});
  const GgufFile f(path);
  for (const auto& t : f.tensors())
    if (t.name == "blk.0.ffn_up.weight") {
      EXPECT_EQ(t.type, std::uint32_t(GgmlType::Q8_0));
    }
  const Model q = load_model(path);
  const Tensor& w = syn.weights.get("blk.0.ffn_up.weight");
  const auto bytes = quantize_q8_0(w.data<float>(), w.numel());
  Tensor expect(DType::f32, w.shape());
  dequantize(GgmlType::Q8_0, bytes.data(), expect.data<float>(), w.numel());
  EXPECT_EQ(test::max_abs_diff(q.weights.get("blk.0.ffn_up.weight"), expect), 0.0);
  // Q8_0 keeps ~0.4% of a block's largest weight; through two layers and a final norm whose weights
  // set logits of std ~3, the logits stay within a few percent of their largest magnitude.
  const Tensor exact = run(syn);
  double largest = 0;
  for (std::int64_t i = 0; i < exact.numel(); ++i) largest = std::max(largest, std::abs(exact.at(i)));
  EXPECT_LT(test::max_abs_diff(run(q), exact), 0.05 * largest);
  fs::remove_all(dir);
}

TEST(Gguf, TruncatedFileNamesTheFile) {
  const fs::path dir = test::temp_dir("trunc");
  const std::string path = (dir / "cut.gguf").string();
  const std::string bytes = slurp(kModels / "qwen2-tiny.gguf");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  try {
    Reference r(load_model(path));
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tensor"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A refused file must not stay mapped (its constructor throws, so no destructor unmaps it): a
// process that tries many files, a fuzzer or a long-lived tool, would run out of mappings.
TEST(Gguf, RefusedFilesAreUnmapped) {
  const fs::path dir = test::temp_dir("unmap");
  const std::string path = (dir / "cut.gguf").string();
  const std::string bytes = slurp(kModels / "qwen2-tiny.gguf");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const auto mappings = [] {
    std::ifstream maps("/proc/self/maps");
    return std::count(std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>(), '\n');
  };
  const auto before = mappings();
  // Each refused file left one mapping; the allocator (ASan's above all) adds a few of its own.
  for (int i = 0; i < 200; ++i) EXPECT_THROW(GgufFile{path}, ModelError);
  EXPECT_LT(mappings(), before + 50);
  fs::remove_all(dir);
}

TEST(Safetensors, MissingConfigFieldIsNamed) {
  const fs::path dir = test::temp_dir("cfg");
  fs::copy(kModels / "qwen2-tiny", dir / "m", fs::copy_options::recursive);
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "m" / "config.json"));
  j.erase("hidden_size");
  std::ofstream(dir / "m" / "config.json") << j.dump();
  try {
    load_model((dir / "m").string());
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("hidden_size"), std::string::npos) << msg;
  }
  fs::remove_all(dir);
}

TEST(Safetensors, Qwen3NextFusedProjectionsAreSplit) {
  // Build the Qwen3-Next checkpoint layout (in_proj_qkvz / in_proj_ba, grouped by key head)
  // from the canonical tensors, and check the loader takes it back apart.
  const Model syn = make_synthetic("qwen35-tiny", 1);
  const auto& c = syn.config;
  const std::int64_t nk = c.gdn_k_heads, dk = c.gdn_k_dim, rho = c.gdn_v_heads / c.gdn_k_heads,
                     rv = rho * c.gdn_v_dim;
  const std::int64_t D = c.hidden, kd = nk * dk;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : syn.weights.all()) {
    if (name.find("attn_qkv") != std::string::npos || name.find("attn_gate") != std::string::npos ||
        name.find("ssm_beta") != std::string::npos || name.find("ssm_alpha") != std::string::npos)
      continue;
    HfName h = canonical_to_hf(name, c.family);
    Tensor v = t;
    if (h.transform == HfTransform::squeeze_conv) v = v.reshaped({v.dim(0), 1, v.dim(1)});
    if (h.transform == HfTransform::neg_exp) {
      v = v.to(DType::f64);
      for (std::int64_t i = 0; i < v.numel(); ++i) v.data<double>()[i] = std::log(-v.data<double>()[i]);
    }
    tensors.emplace_back(h.canonical, v);
  }
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.block_kind(l) != BlockKind::gdn) continue;
    const Tensor& qkv = syn.weights.layer(l, "attn_qkv.weight");
    const Tensor& z = syn.weights.layer(l, "attn_gate.weight");
    const Tensor& b = syn.weights.layer(l, "ssm_beta.weight");
    const Tensor& a = syn.weights.layer(l, "ssm_alpha.weight");
    Tensor fused(DType::f32, {nk * (2 * dk + 2 * rv), D}), ba(DType::f32, {2 * nk * rho, D});
    auto copy_row = [&](Tensor& dst, std::int64_t to, const Tensor& src, std::int64_t from) {
      std::memcpy(dst.data<float>() + to * D, src.data<float>() + from * D, std::size_t(D) * 4);
    };
    std::int64_t r = 0;
    for (std::int64_t g = 0; g < nk; ++g) {
      for (std::int64_t i = 0; i < dk; ++i) copy_row(fused, r++, qkv, g * dk + i);
      for (std::int64_t i = 0; i < dk; ++i) copy_row(fused, r++, qkv, kd + g * dk + i);
      for (std::int64_t i = 0; i < rv; ++i) copy_row(fused, r++, qkv, 2 * kd + g * rv + i);
      for (std::int64_t i = 0; i < rv; ++i) copy_row(fused, r++, z, g * rv + i);
      for (std::int64_t j = 0; j < rho; ++j) copy_row(ba, g * 2 * rho + j, b, g * rho + j);
      for (std::int64_t j = 0; j < rho; ++j) copy_row(ba, g * 2 * rho + rho + j, a, g * rho + j);
    }
    tensors.emplace_back(fmt::format("model.layers.{}.linear_attn.in_proj_qkvz.weight", l), fused);
    tensors.emplace_back(fmt::format("model.layers.{}.linear_attn.in_proj_ba.weight", l), ba);
  }
  const fs::path dir = test::temp_dir("fused");
  nlohmann::json cfg = hf_config_json(c);
  cfg["model_type"] = "qwen3_next";
  std::ofstream(dir / "config.json") << cfg.dump();
  write_safetensors((dir / "model.safetensors").string(), tensors);
  const Model m = load_model(dir.string());
  for (const char* role : {"attn_qkv.weight", "attn_gate.weight", "ssm_beta.weight", "ssm_alpha.weight"})
    EXPECT_EQ(test::max_abs_diff(m.weights.layer(0, role), syn.weights.layer(0, role)), 0.0) << role;
  fs::remove_all(dir);
}

TEST(LoadModel, BadSpecsAreModelErrors) {
  EXPECT_THROW(load_model("synthetic:nope"), ModelError);
  EXPECT_THROW(load_model("/nonexistent/model.gguf"), ModelError);
  EXPECT_THROW(load_model((kModels / "qwen2-tiny" / "config.json").string()), ModelError);
  const Model m = load_model("synthetic:gpt2-tiny", 3, 1);
  EXPECT_EQ(m.config.n_layers, 1);
}

}  // namespace
}  // namespace ds::ref

namespace ds::ref {
namespace {

TEST(Shapes, WrongShapeIsRefusedNamingTheTensor) {
  Model m = make_synthetic("qwen2-tiny", 1);
  m.weights.put("blk.0.attn_k.weight", Tensor(DType::f32, {m.config.kv_dim() + 1, m.config.hidden}));
  try {
    Reference r(m);
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_k.weight"), std::string::npos) << e.what();
  }
  for (const char* p : {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "gpt2-tiny", "qwen35-tiny"}) {
    const Model ok = make_synthetic(p, 1);
    for (const auto& [name, t] : ok.weights.all())
      EXPECT_TRUE(expected_shape(ok.config, name).has_value()) << p << " " << name;
  }
}

}  // namespace
}  // namespace ds::ref

namespace ds::ref {
namespace {

TEST(Gguf, SlidingWindowRoundTrips) {
  Model m = make_synthetic("llama-tiny", 1);
  m.config.sliding_window = 5;
  const fs::path dir = test::temp_dir("swa");
  write_gguf(m, (dir / "m.gguf").string());
  write_hf(m, (dir / "hf").string());
  EXPECT_EQ(load_model((dir / "m.gguf").string()).config.sliding_window, 5);
  const Model hf = load_model((dir / "hf").string());
  EXPECT_EQ(hf.config.sliding_window, 5);
  EXPECT_EQ(hf.config.arch, "mistral");
  fs::remove_all(dir);
}

TEST(Gguf, RopeFreqFactorsRoundTrip) {
  Model m = make_synthetic("llama-tiny", 1);
  m.config.rope_freq_factors = llama3_freq_factors(m.config.rotary_dim(), 10.0, 8.0, 1.0, 4.0, 16.0);
  const fs::path dir = test::temp_dir("ropefreqs");
  const std::string path = (dir / "l3.gguf").string();
  write_gguf(m, path);
  const Model g = load_model(path);
  ASSERT_EQ(g.config.rope_freq_factors.size(), m.config.rope_freq_factors.size());
  for (std::size_t i = 0; i < g.config.rope_freq_factors.size(); ++i)
    EXPECT_EQ(g.config.rope_freq_factors[i], double(float(m.config.rope_freq_factors[i])));
  EXPECT_FALSE(g.weights.has("rope_freqs.weight"));
  EXPECT_TRUE(synthetic_config("llama3.2-1b").rope_freq_factors.size() == 32u);
  fs::remove_all(dir);
}

// Linear scaling divides positions by the factor; the rope op takes it as per-pair divisors of
// the inverse frequencies, so position 2p with factor 2 must rotate exactly like position p.
TEST(Safetensors, LinearRopeScalingFromConfigMatchesScaledPositions) {
  const fs::path dir = test::temp_dir("lincfg");
  fs::copy(kModels / "llama-tiny", dir / "m", fs::copy_options::recursive);
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "m" / "config.json"));
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  std::ofstream(dir / "m" / "config.json") << j.dump();
  const ModelConfig c = load_model((dir / "m").string()).config;
  ASSERT_EQ(c.rope_freq_factors, std::vector<double>(std::size_t(c.rotary_dim() / 2), 2.0));
  Tensor x(DType::f64, {1, c.head_dim});
  for (int i = 0; i < c.head_dim; ++i) x.data<double>()[i] = 0.1 * (i + 1);
  for (int p : {1, 7, 100}) {
    const Tensor scaled =
        rope(x, c.head_dim, c.rotary_dim(), 2 * p, c.rope_theta, c.rope_mode, c.rope_freq_factors);
    const Tensor plain = rope(x, c.head_dim, c.rotary_dim(), p, c.rope_theta, c.rope_mode);
    for (int i = 0; i < c.head_dim; ++i) EXPECT_NEAR(scaled.at(i), plain.at(i), 1e-12) << p << " " << i;
  }
  j["rope_scaling"] = {{"rope_type", "linear"}};
  std::ofstream(dir / "m" / "config.json") << j.dump();
  EXPECT_THROW(load_model((dir / "m").string()), ModelError);  // no factor
  fs::remove_all(dir);
}

// A mixture-of-experts checkpoint of a family whose MoE FFN the reference does not implement
// (qwen3; qwen3moe and llama/Mixtral have one, moe_test.cpp) is refused as such, not as a file
// missing its dense MLP.
TEST(Loaders, MixtureOfExpertsIsRefusedByName) {
  const fs::path dir = test::temp_dir("moe");
  fs::copy(kModels / "qwen3-tiny", dir / "m", fs::copy_options::recursive);
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "m" / "config.json"));
  j["num_experts"] = 512;
  std::ofstream(dir / "m" / "config.json") << j.dump();
  const std::string gguf = (dir / "moe.gguf").string();
  write_gguf(make_synthetic("qwen3-tiny", 1), gguf, {.extra_u32 = {{"expert_count", 8}}});
  for (const std::string& path : {(dir / "m").string(), gguf}) {
    try {
      load_config(path);
      FAIL() << path << " accepted";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("mixture-of-experts MLPs are not supported"), std::string::npos)
          << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(Gguf, LinearRopeScalingTravelsAsMetadata) {
  Model m = make_synthetic("llama-tiny", 1);
  m.config.rope_freq_factors.assign(std::size_t(m.config.rotary_dim() / 2), 4.0);
  const fs::path dir = test::temp_dir("ropelinear");
  const std::string path = (dir / "lin.gguf").string();
  write_gguf(m, path);
  const GgufFile f(path);
  const GgufValue* type = f.find("llama.rope.scaling.type");
  ASSERT_TRUE(type);
  EXPECT_EQ(type->s, "linear");
  for (const auto& t : f.tensors()) EXPECT_NE(t.name, "rope_freqs.weight");
  EXPECT_EQ(load_model(path).config.rope_freq_factors, m.config.rope_freq_factors);
  EXPECT_EQ(load_config(path).rope_freq_factors, m.config.rope_freq_factors);  // the header alone says it
  // Another scaling type (same length, so the file stays well formed) is refused by name, not
  // silently run unscaled.
  std::string bytes = slurp(path);
  const auto at = bytes.find("linear");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 6, "yarn__");
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    load_config(path);
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("rope.scaling.type = yarn__"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Safetensors, Llama3RopeScalingFromConfig) {
  const fs::path dir = test::temp_dir("l3cfg");
  fs::copy(kModels / "llama-tiny", dir / "m", fs::copy_options::recursive);
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "m" / "config.json"));
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 32.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  std::ofstream(dir / "m" / "config.json") << j.dump();
  const Model m = load_model((dir / "m").string());
  EXPECT_EQ(m.config.rope_freq_factors,
            llama3_freq_factors(m.config.rotary_dim(), m.config.rope_theta, 32.0, 1.0, 4.0, 8192.0));
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  std::ofstream(dir / "m" / "config.json") << j.dump();
  try {
    load_model((dir / "m").string());
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("rope_scaling"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ds::ref

namespace ds::ref {
namespace {

// A hand-assembled GGUF header: counts in every integer width gguf-py and other writers use.
class GgufBytes {
 public:
  template <class T>
  GgufBytes& put(T v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    s_.append(p, sizeof(T));
    return *this;
  }
  GgufBytes& str(std::string_view v) {
    put<std::uint64_t>(v.size());
    s_.append(v);
    return *this;
  }
  template <class T>
  GgufBytes& kv(std::string_view key, std::uint32_t type, T v) {
    str(key).put<std::uint32_t>(type).put<T>(v);
    ++n_kv;
    return *this;
  }
  GgufBytes& kv_str(std::string_view key, std::string_view v) {
    str(key).put<std::uint32_t>(8).str(v);
    ++n_kv;
    return *this;
  }
  std::string file() const {
    GgufBytes h;
    h.put<std::uint32_t>(0x46554747).put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(n_kv);
    return h.s_ + s_;
  }
  std::string s_;
  std::uint64_t n_kv = 0;
};

TEST(Gguf, CountsAcceptAnyIntegerTypeAndPerLayerArrays) {
  GgufBytes b;
  b.kv_str("general.architecture", "qwen2");
  b.kv<std::uint16_t>("qwen2.block_count", 2, 3);
  b.kv<std::int64_t>("qwen2.embedding_length", 11, 64);
  b.kv<std::uint64_t>("qwen2.feed_forward_length", 10, 128);
  b.kv<std::int32_t>("qwen2.vocab_size", 5, 256);
  b.kv<double>("qwen2.attention.layer_norm_rms_epsilon", 12, 1e-6);
  b.kv<float>("qwen2.rope.freq_base", 6, 1e6f);
  // head_count as a per-layer i32 array, head_count_kv as u8.
  b.str("qwen2.attention.head_count").put<std::uint32_t>(9).put<std::uint32_t>(5).put<std::uint64_t>(3);
  for (int i = 0; i < 3; ++i) b.put<std::int32_t>(4);
  ++b.n_kv;
  b.kv<std::uint8_t>("qwen2.attention.head_count_kv", 0, 2);
  const fs::path dir = test::temp_dir("meta");
  const std::string path = (dir / "meta.gguf").string();
  std::ofstream(path, std::ios::binary) << b.file();
  const Model m = load_model(path);
  EXPECT_EQ(m.config.n_layers, 3);
  EXPECT_EQ(m.config.hidden, 64);
  EXPECT_EQ(m.config.ffn, 128);
  EXPECT_EQ(m.config.vocab, 256);
  EXPECT_EQ(m.config.n_heads, 4);
  EXPECT_EQ(m.config.n_kv_heads, 2);
  EXPECT_EQ(m.config.head_dim, 16);
  EXPECT_EQ(m.config.norm_eps, 1e-6);
  EXPECT_EQ(m.config.rope_theta, 1e6);
  EXPECT_TRUE(m.config.qkv_bias);
  // ... and the completeness gate lists what such a header-only file lacks.
  const auto missing = check_completeness(m);
  EXPECT_EQ(missing.size(), 2u + 3u * 12u);
  fs::remove_all(dir);
}

TEST(Gguf, MissingMetadataIsNamed) {
  GgufBytes b;
  b.kv_str("general.architecture", "llama");
  b.kv<std::uint32_t>("llama.block_count", 4, 2);
  const fs::path dir = test::temp_dir("meta2");
  const std::string path = (dir / "m.gguf").string();
  std::ofstream(path, std::ios::binary) << b.file();
  try {
    load_model(path);
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("llama.embedding_length"), std::string::npos) << msg;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ds::ref

namespace ds::ref {
namespace {

class HalfFiles : public ::testing::TestWithParam<DType> {};

// Half-precision checkpoints: a bf16 (or f16) model written as GGUF and as safetensors loads
// to the same exact values, so both give the in-memory model's outputs.
TEST_P(HalfFiles, GgufAndSafetensorsAgree) {
  const DType t = GetParam();
  Model m = make_synthetic("qwen3-tiny", 1);
  WeightStore half;
  for (const auto& [name, w] : m.weights.all()) half.put(name, w.to(t));
  m.weights = half;
  const fs::path dir = test::temp_dir(std::string("half-") + std::string(dtype_name(t)));
  write_gguf(m, (dir / "m.gguf").string(), {t == DType::bf16 ? GgmlType::BF16 : GgmlType::F16});
  write_hf(m, (dir / "hf").string());
  const GgufFile f((dir / "m.gguf").string());
  for (const auto& info : f.tensors())
    if (info.ne.size() == 2) {
      EXPECT_EQ(info.type, std::uint32_t(t == DType::bf16 ? GgmlType::BF16 : GgmlType::F16)) << info.name;
    }
  const Tensor want = run(m);
  EXPECT_EQ(test::max_abs_diff(run(load_model((dir / "m.gguf").string())), want), 0.0);
  EXPECT_EQ(test::max_abs_diff(run(load_model((dir / "hf").string())), want), 0.0);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, HalfFiles, ::testing::Values(DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Contracts, RequiredRolesOfAConcreteLayer) {
  const ModelConfig c = synthetic_config("qwen35-tiny");
  EXPECT_EQ(required_roles(c, 0), required_roles(constraints_of(c), BlockKind::gdn));
  EXPECT_EQ(required_roles(c, 1), required_roles(constraints_of(c), BlockKind::gated_attn));
  EXPECT_EQ(required_roles(c, -1), required_model_roles(constraints_of(c)));
}

}  // namespace
}  // namespace ds::ref
