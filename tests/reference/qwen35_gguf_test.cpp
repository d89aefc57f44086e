// The dense Qwen3.5 hybrid in GGUF as llama.cpp lays it out (qwen35: value heads tiled,
// rope.dimension_sections) and as older files do (qwen3next: grouped, or llama.cpp's fused
// ssm_in / ssm_beta_alpha), read back to the same model; MoE files refused before any compute.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

#include "gdn_layout.h"
#include "gguf.h"
#include "hf.h"
#include "load_model.h"
#include "reference.h"
#include "synthetic.h"
#include "test_util.h"

namespace ds::ref {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(DRIFTSCOPE_FIXTURES_DIR);
// ../shared/peers/llama.cpp from the repository root (tests/CMakeLists.txt's DRIFTSCOPE_LLAMACPP_PEERS).
const fs::path kPeerQwen35 =
    kFixtures.parent_path().parent_path() / "shared" / "peers" / "llama.cpp" / "models" / "qwen35-tiny.gguf";

using test::all_stages;
using test::Stages;

// Where a stage holds value heads: per row of its catalog shape, `heads` blocks of `block`
// elements from column `first` (gdn_state: one row per head's [d_k, d_v] block).
struct HeadAxis {
  std::int64_t first = 0, block = 0, row_width = 0;
};
std::optional<HeadAxis> value_head_axis(const ModelConfig& c, const std::string& stage, const Tensor& t) {
  const std::int64_t dv = c.gdn_v_dim, vals = 2 * std::int64_t(c.gdn_key_dim());
  if (stage == "qkv_mixed" || stage == "conv" || stage == "conv_state") return HeadAxis{vals, dv, t.dim(1)};
  if (stage == "z_gate" || stage == "gdn_out" || stage == "gated_norm") return HeadAxis{0, dv, t.dim(1)};
  if (stage == "beta" || stage == "g") return HeadAxis{0, 1, t.dim(1)};
  if (stage == "gdn_state") return HeadAxis{0, t.numel() / c.gdn_v_heads, t.numel()};
  return std::nullopt;
}

// `t` of a model with value heads in `from` order, brought to `to` order.
Tensor reorder_heads(const ModelConfig& c, const std::string& stage, const Tensor& t, GdnHeadMap from,
                     GdnHeadMap to) {
  const auto axis = value_head_axis(c, stage, t);
  if (!axis) return t;
  Tensor out = t;
  const std::int64_t rows = t.numel() / axis->row_width;
  for (std::int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < c.gdn_v_heads; ++h) {
      const std::int64_t at = gdn_value_head_position(c, h, from, to);
      for (std::int64_t e = 0; e < axis->block; ++e)
        out.set(r * axis->row_width + axis->first + at * axis->block + e,
                t.at(r * axis->row_width + axis->first + h * axis->block + e));
    }
  return out;
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::abs(a.at(i) - b.at(i)) / std::max(1.0, std::abs(b.at(i))));
  return worst;
}

// Each stage of `got` against `want` after bringing `got`'s value heads to `want`'s order.
// `tolerance`: the same sums in another order (ssm_out reads the heads in the file's order).
void expect_same_stages_in_head_order(const Model& got_model, const Model& want_model, double tolerance) {
  const Stages got = all_stages(got_model), want = all_stages(want_model);
  ASSERT_EQ(got.size(), want.size());
  const ModelConfig& c = got_model.config;
  for (const auto& [key, w] : want) {
    const auto& [step, layer, stage] = key;
    SCOPED_TRACE(fmt::format("step {} layer {} stage {}", step, layer, stage));
    ASSERT_TRUE(got.count(key));
    const Tensor g = reorder_heads(c, stage, got.at(key), c.gdn_head_map, want_model.config.gdn_head_map);
    ASSERT_EQ(g.shape(), w.shape());
    EXPECT_LE(max_rel_diff(g, w), tolerance);
  }
}

TEST(Qwen35Gguf, WriterNamesTheArchitectureLlamaCppLoads) {
  const GgufFile f((kFixtures / "models" / "qwen35-tiny.gguf").string());
  ASSERT_NE(f.find("general.architecture"), nullptr);
  EXPECT_EQ(f.find("general.architecture")->s, "qwen35");
  const GgufValue* sections = f.find("qwen35.rope.dimension_sections");
  ASSERT_NE(sections, nullptr);
  ASSERT_EQ(sections->arr.size(), 4u);
  std::int64_t pairs = 0;
  for (const auto& v : sections->arr) pairs += v.i;
  EXPECT_EQ(pairs, synthetic_config("qwen35-tiny").rotary_dim() / 2);
  // qwen35 means tiled on both sides: no key of ours needed.
  EXPECT_EQ(f.find("driftscope.gdn_head_map"), nullptr);
  EXPECT_EQ(load_config((kFixtures / "models" / "qwen35-tiny.gguf").string()).gdn_head_map,
            GdnHeadMap::tiled);
}

// The committed qwen35 fixture (value heads tiled by the writer) and the file this project wrote
// before (qwen3next, grouped): the same model, stage for stage after the head reorder.
TEST(Qwen35Gguf, TiledFileComputesTheGroupedModelAfterTheHeadReorder) {
  const Model tiled = load_model((kFixtures / "models" / "qwen35-tiny.gguf").string());
  const Model grouped = load_model((kFixtures / "legacy" / "qwen3next-tiny.gguf").string());
  ASSERT_EQ(tiled.config.gdn_head_map, GdnHeadMap::tiled);
  ASSERT_EQ(grouped.config.gdn_head_map, GdnHeadMap::grouped);
  EXPECT_EQ(grouped.config.family, Family::qwen35);
  expect_same_stages_in_head_order(tiled, grouped, 1e-12);
  // And the synthetic preset by its old name is that grouped model.
  expect_same_stages_in_head_order(make_synthetic("qwen35-tiny", 1), grouped, 0.0);
}

// llama.cpp's qwen35-tiny.gguf (shared peers) is the legacy fixture's bytes relabelled qwen35,
// without the converter's V-head reorder, so it means those weights under the tiled map: the
// stages of the fixture read with --gdn-head-map tiled, exactly.
TEST(Qwen35Gguf, LlamaCppPeerFileReadsAsTheFixtureUnderTheTiledMap) {
  if (!fs::exists(kPeerQwen35)) GTEST_SKIP() << "no shared llama.cpp peers at " << kPeerQwen35;
  const Model peer = load_model(kPeerQwen35.string());
  EXPECT_EQ(peer.config.family, Family::qwen35);
  EXPECT_EQ(peer.config.gdn_head_map, GdnHeadMap::tiled);
  LoadOptions tiled;
  tiled.gdn_head_map = GdnHeadMap::tiled;
  const Model fixture = load_model((kFixtures / "legacy" / "qwen3next-tiny.gguf").string(), 0, 0, tiled);
  expect_same_stages_in_head_order(peer, fixture, 0.0);
}

// llama.cpp's legacy fused Qwen3-Next layout: per key head [q | k | v | z] rows in ssm_in and
// [b | a] in ssm_beta_alpha, value heads grouped.
TEST(Qwen35Gguf, FusedSsmInLayoutIsSplitIntoTheSameModel) {
  const Model syn = make_synthetic("qwen35-tiny", 1);
  const auto& c = syn.config;
  const std::int64_t nk = c.gdn_k_heads, dk = c.gdn_k_dim, rho = c.gdn_v_heads / nk, rv = rho * c.gdn_v_dim,
                     D = c.hidden, kd = nk * dk;
  Model fused = syn;
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.block_kind(l) != BlockKind::gdn) continue;
    const Tensor &qkv = syn.weights.layer(l, "attn_qkv.weight"),
                 &z = syn.weights.layer(l, "attn_gate.weight");
    const Tensor &b = syn.weights.layer(l, "ssm_beta.weight"), &a = syn.weights.layer(l, "ssm_alpha.weight");
    Tensor in(DType::f32, {nk * (2 * dk + 2 * rv), D}), ba(DType::f32, {2 * nk * rho, D});
    std::int64_t r = 0;
    auto row = [&](Tensor& dst, std::int64_t to, const Tensor& src, std::int64_t from) {
      std::memcpy(dst.data<float>() + to * D, src.data<float>() + from * D, std::size_t(D) * 4);
    };
    for (std::int64_t g = 0; g < nk; ++g) {
      for (std::int64_t i = 0; i < dk; ++i) row(in, r++, qkv, g * dk + i);
      for (std::int64_t i = 0; i < dk; ++i) row(in, r++, qkv, kd + g * dk + i);
      for (std::int64_t i = 0; i < rv; ++i) row(in, r++, qkv, 2 * kd + g * rv + i);
      for (std::int64_t i = 0; i < rv; ++i) row(in, r++, z, g * rv + i);
      for (std::int64_t j = 0; j < rho; ++j) row(ba, g * 2 * rho + j, b, g * rho + j);
      for (std::int64_t j = 0; j < rho; ++j) row(ba, g * 2 * rho + rho + j, a, g * rho + j);
    }
    for (const char* role : {"attn_qkv.weight", "attn_gate.weight", "ssm_beta.weight", "ssm_alpha.weight"})
      fused.weights.erase(layer_weight(l, role));
    fused.weights.put(layer_weight(l, "ssm_in.weight"), std::move(in));
    fused.weights.put(layer_weight(l, "ssm_beta_alpha.weight"), std::move(ba));
  }
  const fs::path dir = test::temp_dir("qwen35-fused");
  for (const auto& [name, layout] : {std::pair{"qwen3next", GgufGdnLayout::legacy_grouped},
                                     std::pair{"qwen35", GgufGdnLayout::llamacpp_tiled}}) {
    SCOPED_TRACE(name);
    GgufWriteOptions o;
    o.gdn_layout = layout;
    const std::string path = (dir / fmt::format("{}.gguf", name)).string();
    write_gguf(fused, path, o);
    const GgufFile f(path);
    EXPECT_EQ(f.find("general.architecture")->s, name);
    const Model back = load_model(path);
    for (const char* role :
         {"ssm_in.weight", "ssm_beta_alpha.weight", "fused_qkvz.weight", "fused_ba.weight"})
      EXPECT_FALSE(back.weights.has(layer_weight(0, role))) << role;
    expect_same_stages_in_head_order(back, syn, 1e-12);
  }
  fs::remove_all(dir);
}

// Router and expert tensors: refused from the header, by config and model load alike, naming the
// file and the tensor (the CLI's exit 2), before any weight is decoded.
TEST(Qwen35Gguf, ExpertTensorsAreRefusedNamingFileAndTensor) {
  const fs::path dir = test::temp_dir("qwen35-moe");
  for (const char* tensor :
       {"blk.0.ffn_gate_inp.weight", "blk.1.ffn_up_exps.weight", "blk.0.ffn_down_shexp.weight"}) {
    SCOPED_TRACE(tensor);
    Model m = make_synthetic("qwen35-tiny", 1);
    m.weights.put(tensor, Tensor(DType::f32, {4, m.config.hidden}));
    const std::string path = (dir / "moe.gguf").string();
    write_gguf(m, path);
    for (int config_only = 0; config_only < 2; ++config_only) {
      try {
        if (config_only)
          load_config(path);
        else
          load_model(path);
        ADD_FAILURE() << "accepted";
      } catch (const ModelError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(path), std::string::npos) << msg;
        EXPECT_NE(msg.find(tensor), std::string::npos) << msg;
        EXPECT_NE(msg.find("mixture-of-experts"), std::string::npos) << msg;
      }
    }
  }
  fs::remove_all(dir);
}

// A model whose value heads are tiled (as one read from a qwen35 GGUF) written as an HF
// checkpoint goes back to grouped order: the preset's outputs, stage for stage.
TEST(Qwen35Gguf, TiledModelWritesGroupedHfCheckpoint) {
  const Model syn = make_synthetic("qwen35-tiny", 1);
  Model tiled = syn;
  reorder_gdn_value_heads(tiled.weights, tiled.config, GdnHeadMap::grouped, GdnHeadMap::tiled);
  tiled.config.gdn_head_map = GdnHeadMap::tiled;
  expect_same_stages_in_head_order(tiled, syn, 1e-12);
  const fs::path dir = test::temp_dir("qwen35-hf");
  write_hf(tiled, (dir / "hf").string());
  const Model hf = load_model((dir / "hf").string());
  EXPECT_EQ(hf.config.gdn_head_map, GdnHeadMap::grouped);
  expect_same_stages_in_head_order(hf, syn, 1e-12);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ds::ref
