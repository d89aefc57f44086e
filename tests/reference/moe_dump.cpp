// moe_dump: the reference's mixture-of-experts stages, for test_moe_numpy.py to recompute in numpy.
//
//   moe_dump block PRESET SEED OUT_DIR [--no-norm]
//     writes the synthetic model as OUT_DIR/model/{config.json, model.safetensors} and, for every
//     layer of a 7-token prefill, its ffn_norm (the MoE input) and the MoE stages (with a shared
//     expert, its shexp_out, shexp_gate and ffn_out too), OUT_DIR/stages.json.
//     --no-norm: the same model with norm_topk_prob false (softmax_topk presets).
//   moe_dump route RULE NORM K < ROWS.json
//     route_experts on each row of logits (a JSON array of arrays); prints [{ids, weights}, ...].
#include <fmt/format.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "loaders/hf.h"
#include "reference.h"
#include "synthetic.h"

namespace {

nlohmann::json rows(const ds::Tensor& t) {
  nlohmann::json out = nlohmann::json::array();
  for (std::int64_t r = 0; r < t.dim(0); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (std::int64_t c = 0; c < t.dim(1); ++c) row.push_back(t.at(r * t.dim(1) + c));
    out.push_back(row);
  }
  return out;
}

int block(const std::string& preset, std::uint64_t seed, const std::filesystem::path& out, bool no_norm) {
  ds::Model m = ds::ref::make_synthetic(preset, seed);
  if (no_norm) m.config.moe_norm_topk = false;
  ds::ref::write_hf(m, (out / "model").string());
  ds::ref::Reference ref(m);
  const std::vector<std::int32_t> tokens = {0, 5, 17, 42, 99, 3, 7};
  ds::Tensor x = ref.embed(tokens, 0).at("embed");
  nlohmann::json layers = nlohmann::json::array();
  for (int l = 0; l < m.config.n_layers; ++l) {
    const ds::TensorMap s = ref.layer(l, x, 0);
    nlohmann::json j;
    for (const char* stage : {"ffn_norm", "router_logits", "expert_ids", "expert_weights", "moe_out",
                              "shexp_out", "shexp_gate", "ffn_out"})
      if (s.count(stage)) j[stage] = rows(s.at(stage));  // the shared expert's: Qwen3-Next only
    layers.push_back(j);
    x = s.at("residual_2");
  }
  std::ofstream f(out / "stages.json");
  f << nlohmann::json{{"layers", layers}}.dump() << "\n";
  return f ? 0 : 1;
}

int route(const std::string& rule, bool norm, int k) {
  nlohmann::json in;
  std::cin >> in;
  const ds::MoeRouting r =
      rule == "topk_softmax" ? ds::MoeRouting::topk_softmax : ds::MoeRouting::softmax_topk;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : in) {
    const std::vector<double> logits = row.get<std::vector<double>>();
    const ds::ref::ExpertChoice c = ds::ref::route_experts(logits, k, r, norm);
    out.push_back({{"ids", c.ids}, {"weights", c.weights}});
  }
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() >= 4 && a[0] == "block")
      return block(a[1], std::stoull(a[2]), a[3], a.size() > 4 && a[4] == "--no-norm");
    if (a.size() == 4 && a[0] == "route") return route(a[1], a[2] == "1", std::stoi(a[3]));
    fmt::print(stderr,
               "usage: moe_dump block PRESET SEED OUT_DIR [--no-norm] | route RULE NORM K < ROWS.json\n");
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "moe_dump: {}\n", e.what());
    return 1;
  }
}
