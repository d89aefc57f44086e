// Hugging Face checkpoints: a directory with config.json and *.safetensors.
#pragma once

#include <optional>
#include <string>

#include "load_model.h"
#include <nlohmann/json_fwd.hpp>

namespace ds::ref {

Model load_hf(const std::string& dir, int layers, const LoadOptions& options);
// Writes config.json and model.safetensors, each tensor in its own dtype (A_log as F64 so
// -exp(A_log) round-trips).
void write_hf(const Model& model, const std::string& dir);

// config.json <-> ModelConfig (hf_config.cpp).
ModelConfig hf_config(const nlohmann::json& j, const std::string& file);
nlohmann::json hf_config_json(const ModelConfig& c);

// How a checkpoint tensor becomes a canonical one (hf_names.cpp).
enum class HfTransform { none, transpose, squeeze_conv, neg_exp };
struct HfName {
  std::string canonical;
  HfTransform transform = HfTransform::none;
  int layer = -1;
  // A MoE checkpoint keeps one tensor per expert (mlp.experts.M.gate_proj, Mixtral's
  // block_sparse_moe.experts.M.w1); canonically they are stacked [experts, out, in]
  // (`canonical` names the stack, `expert` is M). -1: not an expert's tensor.
  int expert = -1;
};
// nullopt for tensors the oracle does not use (mask buffers, rotary caches, unknown extras).
std::optional<HfName> hf_to_canonical(const std::string& hf_name, Family family);
// The HF name and transform of a canonical tensor (the transform to undo on writing).
HfName canonical_to_hf(const std::string& canonical, Family family);
// The HF name of expert `expert`'s slice of a stacked canonical expert tensor
// (blk.N.ffn_gate_exps.weight); nullopt when `canonical` is no such stack.
std::optional<std::string> hf_expert_name(const std::string& canonical, Family family, int expert);

}  // namespace ds::ref
