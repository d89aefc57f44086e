// The mixture-of-experts reference (docs/moe.md): the two routing rules and their tie order, the
// MoE stages of a layer, and the weights through GGUF and safetensors with llama.cpp's and HF's
// names and keys, back to the same stages.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <map>
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

struct RouteCase {
  std::string name;
  MoeRouting rule;
  bool norm;
  std::vector<double> logits;
  std::vector<int> ids;
  std::vector<double> weights;  // empty: only the ids are checked
};
void PrintTo(const RouteCase& c, std::ostream* os) { *os << c.name; }

double e(double x) { return std::exp(x); }

std::vector<RouteCase> route_cases() {
  // softmax over [0, 1, 2, 3]: p_i = e^i / S.
  const double s4 = e(0) + e(1) + e(2) + e(3);
  return {
      {"softmax_topk_keeps_full_softmax_weights",
       MoeRouting::softmax_topk,
       false,
       {0, 1, 2, 3},
       {3, 2},
       {e(3) / s4, e(2) / s4}},
      {"softmax_topk_renormalised_sums_to_one",
       MoeRouting::softmax_topk,
       true,
       {0, 1, 2, 3},
       {3, 2},
       {e(3) / (e(3) + e(2)), e(2) / (e(3) + e(2))}},
      {"topk_softmax_is_softmax_over_the_chosen",
       MoeRouting::topk_softmax,
       false,
       {0, 1, 2, 3},
       {3, 2},
       {e(1) / (e(1) + e(0)), e(0) / (e(1) + e(0))}},
      {"ties_go_to_the_lower_index", MoeRouting::softmax_topk, true, {1, 5, 5, 5, 0}, {1, 2}, {0.5, 0.5}},
      {"tie_at_the_cut_picks_the_lower_index", MoeRouting::topk_softmax, false, {2, 9, 2, 2}, {1, 0}, {}},
      {"negative_logits_rank_by_value", MoeRouting::topk_softmax, false, {-3, -1, -2, -7}, {1, 2}, {}},
      {"k_equals_experts_orders_all", MoeRouting::softmax_topk, true, {0.5, -0.5, 1.5}, {2, 0, 1}, {}},
  };
}

class RouteExperts : public testing::TestWithParam<RouteCase> {};

TEST_P(RouteExperts, ChoosesAndWeighsAsTheRuleSays) {
  const RouteCase& c = GetParam();
  const ExpertChoice got = route_experts(c.logits, int(c.ids.size()), c.rule, c.norm);
  EXPECT_EQ(got.ids, c.ids);
  ASSERT_EQ(got.weights.size(), c.ids.size());
  for (std::size_t i = 0; i < c.weights.size(); ++i) EXPECT_NEAR(got.weights[i], c.weights[i], 1e-15) << i;
  double sum = 0;
  for (double w : got.weights) sum += w;
  if (c.norm || c.rule == MoeRouting::topk_softmax) {
    EXPECT_NEAR(sum, 1.0, 1e-15);
  }
}

INSTANTIATE_TEST_SUITE_P(Moe, RouteExperts, testing::ValuesIn(route_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Moe, TopKRefusesAKOutOfRange) {
  const std::vector<double> v = {1, 2};
  EXPECT_THROW(top_k(v, 0), std::invalid_argument);
  EXPECT_THROW(top_k(v, 3), std::invalid_argument);
}

// A MoE layer has the router and expert stages instead of the dense MLP's, with the shapes the
// catalog gives, ids that are valid experts, and weights of the rule's sum.
TEST(Moe, LayerStagesHaveTheCatalogShapes) {
  for (const char* preset : {"qwen3moe-tiny", "mixtral-tiny"}) {
    SCOPED_TRACE(preset);
    const Model m = make_synthetic(preset, 3);
    const ModelConfig& c = m.config;
    Reference r(m);
    const auto tokens = test::token_ids(6, c.vocab, 5);
    const Tensor x = r.embed(tokens, 0).at("embed");
    const TensorMap s = r.layer(0, x, 0);
    std::vector<std::string> names;
    for (const auto& [name, t] : s) names.push_back(name);
    std::vector<std::string> want;
    for (std::string_view st : stages_for(c, 0)) want.emplace_back(st);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(names, want);
    EXPECT_FALSE(s.count("gate"));
    EXPECT_FALSE(s.count("down"));
    EXPECT_EQ(s.at("router_logits").shape(), (Shape{6, c.n_experts}));
    EXPECT_EQ(s.at("expert_ids").shape(), (Shape{6, c.n_experts_used}));
    EXPECT_EQ(s.at("expert_weights").shape(), (Shape{6, c.n_experts_used}));
    EXPECT_EQ(s.at("moe_out").shape(), (Shape{6, c.hidden}));
    std::set<int> used;
    for (std::int64_t t = 0; t < 6; ++t) {
      double sum = 0, prev = 2;
      std::set<int> row;
      for (int j = 0; j < c.n_experts_used; ++j) {
        const double id = s.at("expert_ids").at(t * c.n_experts_used + j);
        const double w = s.at("expert_weights").at(t * c.n_experts_used + j);
        EXPECT_EQ(id, std::floor(id));
        EXPECT_GE(id, 0);
        EXPECT_LT(id, c.n_experts);
        row.insert(int(id));
        used.insert(int(id));
        EXPECT_LE(w, prev);  // highest weight first
        prev = w;
        sum += w;
      }
      EXPECT_EQ(int(row.size()), c.n_experts_used);  // no expert twice
      EXPECT_NEAR(sum, 1.0, 1e-12);                  // both presets' rules sum to one
    }
    EXPECT_GT(used.size(), std::size_t(c.n_experts_used));  // tokens do not all pick the same experts
  }
}

// A dense model keeps its MLP stages and has none of the MoE ones.
TEST(Moe, DenseLayersHaveNoMoeStages) {
  for (std::string_view st : stages_for(synthetic_config("qwen3-tiny"), 0))
    EXPECT_FALSE(is_moe_stage(st)) << st;
}

using test::all_stages;
using test::Stages;

void expect_same_moe_config(const ModelConfig& got, const ModelConfig& want) {
  EXPECT_EQ(got.family, want.family);
  EXPECT_EQ(got.n_experts, want.n_experts);
  EXPECT_EQ(got.n_experts_used, want.n_experts_used);
  EXPECT_EQ(got.expert_ffn, want.expert_ffn);
  EXPECT_EQ(got.moe_routing, want.moe_routing);
  if (want.moe_routing == MoeRouting::softmax_topk) {
    EXPECT_EQ(got.moe_norm_topk, want.moe_norm_topk);
  }
}

// Our GGUF, read back: llama.cpp's keys give the same MoE config, its names and 3-D shapes the
// same experts, stage for stage (llama Q/K rows permuted and un-permuted exactly).
TEST(Moe, GgufRoundTripGivesTheSameStages) {
  const fs::path dir = test::temp_dir("moe-gguf");
  for (const char* preset : {"qwen3moe-tiny", "mixtral-tiny"}) {
    SCOPED_TRACE(preset);
    const Model syn = make_synthetic(preset, 1);
    const std::string path = (dir / fmt::format("{}.gguf", preset)).string();
    write_gguf(syn, path);
    const GgufFile f(path);
    const std::string arch = f.find("general.architecture")->s;
    EXPECT_EQ(arch, syn.config.family == Family::qwen3moe ? "qwen3moe" : "llama");
    EXPECT_EQ(f.find(arch + ".expert_count")->i, syn.config.n_experts);
    EXPECT_EQ(f.find(arch + ".expert_used_count")->i, syn.config.n_experts_used);
    bool saw_exps = false;
    for (const auto& t : f.tensors())
      if (t.name == "blk.0.ffn_gate_exps.weight") {
        saw_exps = true;  // ggml order: {n_embd, n_ff_exp, n_expert}
        EXPECT_EQ(t.ne, (Shape{syn.config.hidden, syn.config.expert_ffn, syn.config.n_experts}));
      }
    EXPECT_TRUE(saw_exps);
    const Model back = load_model(path);
    expect_same_moe_config(back.config, syn.config);
    test::expect_same_stages(back, syn, 1e-12);
  }
  fs::remove_all(dir);
}

// Our safetensors checkpoint (one tensor per expert, HF's names), read back.
TEST(Moe, SafetensorsRoundTripGivesTheSameStages) {
  const fs::path dir = test::temp_dir("moe-hf");
  for (const char* preset : {"qwen3moe-tiny", "mixtral-tiny"}) {
    SCOPED_TRACE(preset);
    const Model syn = make_synthetic(preset, 1);
    const fs::path out = dir / preset;
    write_hf(syn, out.string());
    std::ifstream cf(out / "config.json");
    const nlohmann::json j = nlohmann::json::parse(cf);
    const bool mixtral = syn.config.family == Family::llama;
    EXPECT_EQ(j["model_type"], mixtral ? "mixtral" : "qwen3_moe");
    EXPECT_EQ(j["num_experts_per_tok"], syn.config.n_experts_used);
    EXPECT_EQ(j[mixtral ? "num_local_experts" : "num_experts"], syn.config.n_experts);
    const Model back = load_model(out.string());
    expect_same_moe_config(back.config, syn.config);
    EXPECT_EQ(back.config.arch, mixtral ? "mixtral" : "qwen3_moe");
    test::expect_same_stages(back, syn, 0.0);
  }
  fs::remove_all(dir);
}

// Refusals name the file and what is wrong, before any compute.
TEST(Moe, IncompleteOrUnsupportedExpertsAreRefusedByName) {
  const fs::path dir = test::temp_dir("moe-refuse");
  const Model syn = make_synthetic("qwen3moe-tiny", 1);
  // config.json against the checkpoint: a dense-layer mix, an expert beyond num_experts, and
  // one expert fewer than it declares.
  const auto edited = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    const fs::path d = dir / name;
    write_hf(syn, d.string());
    auto j = nlohmann::json::parse(std::ifstream(d / "config.json"));
    edit(j);
    std::ofstream(d / "config.json") << j.dump();
    return d.string();
  };
  const auto refused = [](const std::string& path, const std::string& want) {
    try {
      load_model(path);
      ADD_FAILURE() << path << " accepted";
    } catch (const ModelError& err) {
      EXPECT_NE(std::string(err.what()).find(want), std::string::npos) << err.what();
    }
  };
  refused(edited("sparse_step", [](nlohmann::json& j) { j["decoder_sparse_step"] = 2; }),
          "decoder_sparse_step");
  refused(edited("fewer", [&](nlohmann::json& j) { j["num_experts"] = syn.config.n_experts - 1; }),
          fmt::format("experts.{}.", syn.config.n_experts - 1));
  refused(edited("more", [&](nlohmann::json& j) { j["num_experts"] = syn.config.n_experts + 1; }),
          fmt::format("no *.safetensors file holds model.layers.0.mlp.experts.{}.", syn.config.n_experts));
  {
    // Shared experts (Qwen3-Next, Qwen2-MoE) in a qwen3moe GGUF: refused naming the tensor.
    Model m = syn;
    m.weights.put("blk.0.ffn_up_shexp.weight", Tensor(DType::f32, {4, m.config.hidden}));
    const std::string path = (dir / "shexp.gguf").string();
    write_gguf(m, path);
    try {
      load_config(path);
      ADD_FAILURE() << "shared expert accepted";
    } catch (const ModelError& err) {
      EXPECT_NE(std::string(err.what()).find("blk.0.ffn_up_shexp.weight"), std::string::npos) << err.what();
    }
  }
  {
    // A llama GGUF that declares experts but not how many each token uses.
    const std::string path = (dir / "no_used.gguf").string();
    write_gguf(make_synthetic("llama-tiny", 1), path, {.extra_u32 = {{"expert_count", 8}}});
    try {
      load_config(path);
      ADD_FAILURE() << "expert_count without expert_used_count accepted";
    } catch (const ModelError& err) {
      EXPECT_NE(std::string(err.what()).find("llama.expert_used_count"), std::string::npos) << err.what();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ds::ref
