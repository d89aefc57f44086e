// Qwen3-Next as it ships (docs/moe.md): the Gated DeltaNet hybrid whose every FFN is a MoE plus a
// shared expert behind a sigmoid gate. Its stages, its GGUF in llama.cpp's qwen3next layout
// (fused ssm_in / ssm_beta_alpha, a 1-D ffn_gate_inp_shexp, the expert_* keys) and its HF
// checkpoint (model_type qwen3_next, fused in_proj_qkvz / in_proj_ba, mlp.shared_expert*), each
// read back to the same model; the dense files that carried the name before still load as qwen35.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "contracts.h"
#include "gguf.h"
#include "hf.h"
#include "load_model.h"
#include "reference.h"
#include "stage_catalog.h"
#include "synthetic.h"
#include "test_util.h"

namespace ds::ref {
namespace {

namespace fs = std::filesystem;

bool has(const std::vector<std::string_view>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Every layer kind of the hybrid takes the MoE FFN with the shared expert in place of the dense MLP.
TEST(Qwen3Next, EveryLayerKindHasTheMoeAndSharedExpertStages) {
  const ModelConfig c = synthetic_config("qwen3next-tiny");
  ASSERT_EQ(c.family, Family::qwen3next);
  ASSERT_TRUE(c.shared_expert());
  for (int l : {0, 1}) {
    SCOPED_TRACE(block_kind_name(c.block_kind(l)));
    const auto st = stages_for(c, l);
    for (const char* s : {"ffn_norm", "router_logits", "expert_ids", "expert_weights", "moe_out", "shexp_out",
                          "shexp_gate", "ffn_out", "residual_2"})
      EXPECT_TRUE(has(st, s)) << s;
    for (const char* s : {"gate", "up", "ffn_act", "down"}) EXPECT_FALSE(has(st, s)) << s;
  }
  EXPECT_EQ(c.block_kind(0), BlockKind::gdn);
  EXPECT_EQ(c.block_kind(1), BlockKind::gated_attn);
  // Qwen3-MoE has routed experts only: no shared-expert stage.
  for (std::string_view s : stages_for(synthetic_config("qwen3moe-tiny"), 0))
    EXPECT_FALSE(is_shared_expert_stage(s));
}

// The shared expert's arithmetic on the reference's own stages: the gate is a sigmoid (in (0, 1),
// one per token), ffn_out = moe_out + gate * shexp_out, and the layer adds ffn_out.
TEST(Qwen3Next, SharedExpertIsGatedAndAddedToTheRoutedOutput) {
  const Model m = make_synthetic("qwen3next-tiny", 1);
  Reference r(m);
  const std::vector<std::int32_t> tokens = {3, 14, 15, 92, 65};
  Tensor x = r.embed(tokens, 0).at("embed");
  for (int l = 0; l < m.config.n_layers; ++l) {
    SCOPED_TRACE(fmt::format("layer {}", l));
    const TensorMap s = r.layer(l, x, 0);
    const Tensor &gate = s.at("shexp_gate"), &moe = s.at("moe_out"), &sh = s.at("shexp_out");
    ASSERT_EQ(gate.shape(), (Shape{5, 1}));
    const std::int64_t D = m.config.hidden;
    double shared_rms = 0, routed_rms = 0;
    for (std::int64_t t = 0; t < 5; ++t) {
      EXPECT_GT(gate.at(t), 0.0);
      EXPECT_LT(gate.at(t), 1.0);
      for (std::int64_t d = 0; d < D; ++d) {
        const double want = moe.at(t * D + d) + gate.at(t) * sh.at(t * D + d);
        EXPECT_DOUBLE_EQ(s.at("ffn_out").at(t * D + d), want);
        EXPECT_DOUBLE_EQ(s.at("residual_2").at(t * D + d), s.at("residual_1").at(t * D + d) + want);
        shared_rms += sh.at(t * D + d) * sh.at(t * D + d);
        routed_rms += moe.at(t * D + d) * moe.at(t * D + d);
      }
    }
    // Neither half is negligible: a dropped gate or a dropped shared expert shows in ffn_out.
    EXPECT_GT(shared_rms, 0.1 * routed_rms);
    EXPECT_GT(routed_rms, 0.1 * shared_rms);
    x = s.at("residual_2");
  }
}

void expect_same_config(const ModelConfig& got, const ModelConfig& want) {
  EXPECT_EQ(got.family, want.family);
  EXPECT_EQ(got.layer_kinds, want.layer_kinds);
  EXPECT_EQ(got.n_experts, want.n_experts);
  EXPECT_EQ(got.n_experts_used, want.n_experts_used);
  EXPECT_EQ(got.expert_ffn, want.expert_ffn);
  EXPECT_EQ(got.shared_expert_ffn, want.shared_expert_ffn);
  EXPECT_EQ(got.moe_routing, want.moe_routing);
  EXPECT_EQ(got.moe_norm_topk, want.moe_norm_topk);
  EXPECT_EQ(got.gdn_head_map, GdnHeadMap::grouped);
}

// Our GGUF is llama.cpp's qwen3next layout (llama_model_qwen3next::load_arch_tensors): the GDN
// input projections fused per key head, the shared-expert gate a vector, the expert keys; read
// back it is the same model. (1 + w) norms are stored pre-added in f32, hence the tolerance.
TEST(Qwen3Next, GgufInLlamaCppLayoutRoundTrips) {
  const fs::path dir = test::temp_dir("qwen3next-gguf");
  const Model syn = make_synthetic("qwen3next-tiny", 1);
  const ModelConfig& c = syn.config;
  const std::string path = (dir / "qwen3next-tiny.gguf").string();
  write_gguf(syn, path);
  const GgufFile f(path);
  EXPECT_EQ(f.find("general.architecture")->s, "qwen3next");
  EXPECT_EQ(f.find("qwen3next.expert_count")->i, c.n_experts);
  EXPECT_EQ(f.find("qwen3next.expert_used_count")->i, c.n_experts_used);
  EXPECT_EQ(f.find("qwen3next.expert_feed_forward_length")->i, c.expert_ffn);
  EXPECT_EQ(f.find("qwen3next.expert_shared_feed_forward_length")->i, c.shared_expert_ffn);
  std::map<std::string, Shape> ne;
  for (const auto& t : f.tensors()) ne[t.name] = t.ne;
  const std::int64_t qkvz = 2 * c.gdn_key_dim() + 2 * c.gdn_value_dim(), ba = 2 * c.gdn_v_heads;
  EXPECT_EQ(ne["blk.0.ssm_in.weight"], (Shape{c.hidden, qkvz}));
  EXPECT_EQ(ne["blk.0.ssm_beta_alpha.weight"], (Shape{c.hidden, ba}));
  for (const char* split : {"blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_beta.weight",
                            "blk.0.ssm_alpha.weight", "blk.1.ffn_norm.weight", "blk.0.ffn_gate.weight"})
    EXPECT_FALSE(ne.count(split)) << split;
  for (int l : {0, 1}) {
    const auto n = [&](const char* role) { return fmt::format("blk.{}.{}.weight", l, role); };
    EXPECT_EQ(ne[n("post_attention_norm")], (Shape{c.hidden}));
    EXPECT_EQ(ne[n("ffn_gate_inp")], (Shape{c.hidden, c.n_experts}));
    EXPECT_EQ(ne[n("ffn_up_exps")], (Shape{c.hidden, c.expert_ffn, c.n_experts}));
    EXPECT_EQ(ne[n("ffn_down_exps")], (Shape{c.expert_ffn, c.hidden, c.n_experts}));
    EXPECT_EQ(ne[n("ffn_gate_inp_shexp")], (Shape{c.hidden}));
    EXPECT_EQ(ne[n("ffn_gate_shexp")], (Shape{c.hidden, c.shared_expert_ffn}));
    EXPECT_EQ(ne[n("ffn_up_shexp")], (Shape{c.hidden, c.shared_expert_ffn}));
    EXPECT_EQ(ne[n("ffn_down_shexp")], (Shape{c.shared_expert_ffn, c.hidden}));
  }
  const Model back = load_model(path);
  expect_same_config(back.config, c);
  EXPECT_TRUE(check_completeness(back).empty());
  test::expect_same_stages(back, syn, 1e-5);
  fs::remove_all(dir);
}

// Our HF checkpoint is Qwen3NextForCausalLM's: model_type qwen3_next, the fused GDN projections,
// mlp.experts.M.*, mlp.shared_expert.* and mlp.shared_expert_gate; read back, the same stages.
TEST(Qwen3Next, HfCheckpointRoundTrips) {
  const fs::path dir = test::temp_dir("qwen3next-hf");
  const Model syn = make_synthetic("qwen3next-tiny", 1);
  write_hf(syn, (dir / "hf").string());
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "hf" / "config.json"));
  EXPECT_EQ(j["model_type"], "qwen3_next");
  EXPECT_EQ(j["num_experts"], syn.config.n_experts);
  EXPECT_EQ(j["shared_expert_intermediate_size"], syn.config.shared_expert_ffn);
  EXPECT_EQ(j["norm_topk_prob"], true);
  std::ifstream st(dir / "hf" / "model.safetensors", std::ios::binary);
  std::uint64_t n = 0;
  st.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  st.read(header.data(), std::streamsize(n));
  const nlohmann::json h = nlohmann::json::parse(header);
  for (const char* name :
       {"model.layers.0.linear_attn.in_proj_qkvz.weight", "model.layers.0.linear_attn.in_proj_ba.weight",
        "model.layers.1.mlp.shared_expert.down_proj.weight", "model.layers.0.mlp.experts.15.up_proj.weight"})
    EXPECT_TRUE(h.contains(name)) << name;
  EXPECT_EQ(h["model.layers.1.mlp.shared_expert_gate.weight"]["shape"],
            nlohmann::json::array({1, syn.config.hidden}));
  EXPECT_FALSE(h.contains("model.layers.0.linear_attn.in_proj_qkv.weight"));
  const Model back = load_model((dir / "hf").string());
  expect_same_config(back.config, syn.config);
  test::expect_same_stages(back, syn, 0.0);
  fs::remove_all(dir);
}

// A missing shared-expert tensor is named by the completeness gate before any compute; a config
// without experts is the dense hybrid (the files this project wrote under the name before).
TEST(Qwen3Next, MissingSharedExpertIsRefusedAndDenseFilesAreQwen35) {
  const fs::path dir = test::temp_dir("qwen3next-refuse");
  Model m = make_synthetic("qwen3next-tiny", 1);
  m.weights.erase("blk.1.ffn_gate_inp_shexp.weight");
  const std::string path = (dir / "no-gate.gguf").string();
  write_gguf(m, path);
  try {
    Reference r(load_model(path));
    ADD_FAILURE() << "accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.ffn_gate_inp_shexp.weight"), std::string::npos) << e.what();
  }
  const Model dense = make_synthetic("qwen35-tiny", 1);
  write_hf(dense, (dir / "dense").string());
  auto j = nlohmann::json::parse(std::ifstream(dir / "dense" / "config.json"));
  j["model_type"] = "qwen3_next";
  std::ofstream(dir / "dense" / "config.json") << j.dump();
  EXPECT_EQ(load_config((dir / "dense").string()).family, Family::qwen35);
  fs::remove_all(dir);
}

// The real shape: Qwen3-Next-80B-A3B's config, its per-layer weights as llama.cpp sizes them.
TEST(Qwen3Next, RealShapePresetIsTheReleasedConfig) {
  const ModelConfig c = synthetic_config("qwen3-next-80b-a3b");
  EXPECT_EQ(c.n_layers, 48);
  EXPECT_EQ(c.n_experts, 512);
  EXPECT_EQ(c.n_experts_used, 10);
  EXPECT_EQ(c.expert_ffn, 512);
  EXPECT_EQ(c.shared_expert_ffn, 512);
  EXPECT_EQ(c.gdn_conv_dim(), 8192);                              // HF conv1d channels
  EXPECT_EQ(2 * c.gdn_key_dim() + 2 * c.gdn_value_dim(), 12288);  // in_proj_qkvz rows
  EXPECT_EQ(2 * c.q_dim(), 8192);                                 // q_proj with its gate
  EXPECT_EQ(c.block_kind(3), BlockKind::gated_attn);
  EXPECT_EQ(c.block_kind(2), BlockKind::gdn);
  EXPECT_EQ(synthetic_dtype("qwen3-next-80b-a3b"), DType::bf16);
}

}  // namespace
}  // namespace ds::ref
